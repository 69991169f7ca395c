/** A WebSocket route is an entry of its role's list: documented from the list, attached to Node's server, one per server. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { createHttpServer } from '../../src/http/server.js';
import type { UpgradeRoute } from '../../src/http/route.js';

const upgrade = (path: string, attached: Server[]): UpgradeRoute => ({
  kind: 'upgrade',
  doc: { path, summary: 'a session', parameters: [], errors: ['not_found'], messages: 'frames' },
  attach: (server) => void attached.push(server),
});

describe('an upgrade entry of a route list', () => {
  it("attaches its handler to the server's Node server, is in the document, and a second one is refused", async () => {
    const server = createHttpServer({ name: 'relay', logger: false, bodyLimitBytes: 1024, tooLargeCode: 'envelope_too_large' });
    const attached: Server[] = [];
    server.add([upgrade('/ws/{id}', attached)]);
    try {
      assert.deepEqual(attached, [server.fastify.server]);
      assert.deepEqual(
        server.upgrades().map((u) => u.path),
        ['/ws/{id}'],
      );
      assert.throws(() => server.add([upgrade('/other', attached)]), /second WebSocket route/);
      const doc = (await server.fastify.inject({ method: 'GET', url: '/openapi.json' })).json<{
        paths: Record<string, { get?: { 'x-websocket'?: boolean } }>;
      }>();
      assert.equal(doc.paths['/ws/{id}']?.get?.['x-websocket'], true);
      assert.equal(doc.paths['/other'], undefined);
    } finally {
      await server.fastify.close();
    }
  });
});
