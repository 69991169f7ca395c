/** The contract check of injected requests (test/support/inject-contract.ts) fails on what the document does not say. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from 'typebox';
import { createHttpServer, json } from '../../src/http/server.js';
import { injectChecked } from '../support/inject-contract.js';

describe('injectChecked', () => {
  it('passes what its route documents, and throws on an answer or an accepted body the document does not describe', async () => {
    const server = createHttpServer({ name: 'cache', logger: false, bodyLimitBytes: 1024, tooLargeCode: 'envelope_too_large' });
    const N = Type.Object({ n: Type.Number() }, { additionalProperties: false });
    server.route('GET', '/good', () => json(200, { n: 1 }), { schema: { response: { 200: N } } });
    server.route('GET', '/bad', () => json(200, { n: 'one' }), { schema: { response: { 200: N } } });
    server.route('POST', '/take', () => json(200, { n: 2 }), { schema: { body: N, response: { 200: N } } });
    try {
      assert.equal((await injectChecked(server, { method: 'GET', url: '/good' })).statusCode, 200);
      await assert.rejects(injectChecked(server, { method: 'GET', url: '/bad' }), /not described by the OpenAPI document/);
      // an accepted request body outside the route's request schema
      await assert.rejects(injectChecked(server, { method: 'POST', url: '/take', payload: { n: 'two' } }), /not described by the OpenAPI document/);
      assert.equal((await injectChecked(server, { method: 'POST', url: '/take', payload: { n: 2 } })).statusCode, 200);
    } finally {
      await server.fastify.close();
    }
  });
});
