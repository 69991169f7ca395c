/**
 * A role is one definition: its route list and its whole-document adjustment (src/http/openapi.ts `RoleDefinition`).
 * The served document applies each added role's adjustment, in the order the roles were added, after the routes and
 * upgrades are in; a bare route list adjusts nothing; a read-only view of a server keeps its roles' adjustments.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from 'typebox';
import { createHttpServer } from '../../src/http/server.js';
import { json } from '../../src/http/context.js';
import { asIs, defineRoute, type Route } from '../../src/http/route.js';
import { withProfileLabel, type OpenApiDoc } from '../../src/http/openapi-additions.js';
import { readOnlyServer } from '../../src/mirror/read-only.js';

const route = (url: string, method: 'GET' | 'POST' = 'GET'): Route =>
  defineRoute({ method, url, summary: url, answers: { 200: Type.Object({}) }, errors: [], parse: asIs, handle: () => json(200, {}) });

/** Marks the document with the name of the adjustment that ran last, and lists every one that ran. */
const mark =
  (name: string) =>
  (doc: OpenApiDoc): OpenApiDoc => ({ ...doc, 'x-ran': [...((doc['x-ran'] as string[] | undefined) ?? []), name], 'x-paths': Object.keys(doc.paths ?? {}) });

async function served(add: (server: ReturnType<typeof createHttpServer>) => void): Promise<OpenApiDoc> {
  const server = createHttpServer({ name: 'test', logger: false, bodyLimitBytes: 1024, tooLargeCode: 'payload_too_large' });
  add(server);
  try {
    return (await server.fastify.inject({ method: 'GET', url: '/openapi.json' })).json<OpenApiDoc>();
  } finally {
    await server.fastify.close();
  }
}

describe('a role definition: its routes and its document adjustment', () => {
  it("applies each role's adjustment once, in the order the roles were added, over the whole document", async () => {
    const doc = await served((server) => {
      server.add({ routes: [route('/a')], adjustDocument: mark('first') });
      server.add([route('/plain')]);
      server.add({ routes: [route('/b')], adjustDocument: mark('second') });
    });
    assert.deepEqual(doc['x-ran'], ['first', 'second']);
    // every route (and the document's own) is in before the adjustments run
    assert.deepEqual(doc['x-paths'], ['/openapi.json', '/a', '/plain', '/b']);
  });

  it('a bare route list and a role without an adjustment change nothing beyond their routes', async () => {
    const doc = await served((server) => {
      server.add([route('/plain')]);
      server.add({ routes: [route('/a')] });
    });
    assert.equal(doc['x-ran'], undefined);
    assert.deepEqual(Object.keys(doc.paths ?? {}), ['/openapi.json', '/plain', '/a']);
  });

  it("a mirror's read-only view keeps its role's adjustment (the profile label) and refuses its writes", async () => {
    const doc = await served((server) => {
      readOnlyServer(server, 'http://primary').add({ routes: [route('/a'), route('/w', 'POST')], adjustDocument: (d) => withProfileLabel(d, 'openpayload') });
    });
    assert.equal((doc.info as Record<string, unknown>)['x-ddn-profile'], 'openpayload');
    assert.match(JSON.stringify(doc.paths?.['/w']), /read_only_mirror/);
  });
});
