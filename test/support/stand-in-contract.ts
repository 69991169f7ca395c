/**
 * A stand-in role for the tests of the contract checks (test/app/contract-check.test.ts, checked-proxy.test.ts): a
 * real HTTP server whose `GET /openapi.json` is a small document, answering some paths against it and some not.
 */
import { createServer, type Server } from 'node:http';

export const DOC = {
  openapi: '3.1.0',
  info: { title: 'stand-in', version: '0' },
  paths: {
    '/things/{id}': {
      get: {
        responses: {
          200: { content: { 'application/json': { schema: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } } } } },
          404: {
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['code'],
                  properties: { code: { enum: ['thing_not_found'] }, error: { type: 'string' }, message: { type: 'string' } },
                },
              },
            },
          },
        },
      },
    },
    '/things': {
      post: {
        requestBody: {
          content: {
            'application/json': { schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } }, additionalProperties: false } },
          },
        },
        responses: { 202: { content: { 'application/json': { schema: { type: 'object', properties: { ok: { type: 'boolean' } } } } } } },
      },
    },
  },
};

/**
 * Answers by path: `/things/good` its document's 200 (with the request's `x-ddn-test` header back as `x-ddn-echo`),
 * `/things/bad` a 200 without `id`, `/things/odd` an unlisted 404 code.
 */
export function standIn(): Server {
  return createServer((req, res) => {
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    req.resume();
    req.on('end', () => {
      if (req.url === '/openapi.json') return json(200, DOC);
      if (req.url === '/things/good') res.setHeader('x-ddn-echo', req.headers['x-ddn-test'] ?? '');
      if (req.url === '/things/good') return json(200, { id: 'good' });
      if (req.url === '/things/bad') return json(200, { name: 'no id' });
      if (req.url === '/things/odd') return json(404, { code: 'did_not_found', error: 'did_not_found', message: 'x' });
      return json(202, { ok: true });
    });
  });
}
