/**
 * The explorer's routes without a browser: one HTML page for every explorer address (under the Directory's base
 * path too), the bundle's two files, 404 `not_found` for anything else, and a plain notice when the bundle is
 * not built.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerExplorerRoutes } from '../../src/explorer/routes.js';
import { createHttpServer, type HttpServer } from '../../src/http/server.js';
import { injectChecked } from '../support/inject-contract.js';

async function serverWith(bundleDir: string, basePath?: string): Promise<HttpServer> {
  const server = createHttpServer({
    name: 'directory',
    logger: false,
    bodyLimitBytes: 65_536,
    tooLargeCode: 'payload_too_large',
    ...(basePath === undefined ? {} : { basePath }),
  });
  registerExplorerRoutes(server, { bundleDir });
  await server.fastify.ready();
  return server;
}

describe('explorer routes', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'ddn-explorer-'));
    writeFileSync(join(dir, 'app.js'), 'console.log("explorer")');
    writeFileSync(join(dir, 'app.css'), 'body{}');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('serves the page at every depth up to four segments, and the two bundle files', async () => {
    const s = await serverWith(dir);
    try {
      for (const url of [
        '/explorer',
        '/explorer/',
        '/explorer/blocks',
        '/explorer/did/did:platform:abc',
        '/explorer/policy/did/did%3Aplatform%3Aabc',
        '/explorer/a/b/c/d',
      ]) {
        const res = await injectChecked(s, { method: 'GET', url });
        assert.equal(res.statusCode, 200, url);
        assert.match(res.headers['content-type'] as string, /^text\/html; charset=utf-8/);
        assert.equal(res.headers['cache-control'], 'no-cache');
        assert.match(res.body, /<div id="app" data-base="\/explorer" data-api="">/);
        assert.match(res.body, /<script type="module" src="\/explorer\/assets\/app\.js"><\/script>/);
      }
      assert.equal((await injectChecked(s, { method: 'HEAD', url: '/explorer/blocks' })).statusCode, 200);
      const js = await injectChecked(s, { method: 'GET', url: '/explorer/assets/app.js' });
      assert.equal(js.statusCode, 200);
      assert.equal(js.body, 'console.log("explorer")');
      assert.equal(js.headers['content-type'], 'text/javascript; charset=utf-8');
      assert.equal(js.headers['x-content-type-options'], 'nosniff');
      assert.equal((await injectChecked(s, { method: 'GET', url: '/explorer/assets/app.css' })).headers['content-type'], 'text/css; charset=utf-8');
      for (const url of ['/explorer/assets/app.js.map', '/explorer/assets/..%2Fpackage.json', '/explorer/a/b/c/d/e']) {
        const res = await injectChecked(s, { method: 'GET', url });
        assert.equal(res.statusCode, 404, url);
        assert.equal(res.json().code, 'not_found');
      }
    } finally {
      await s.fastify.close();
    }
  });

  it('under a base path, the page points at the explorer and the JSON routes below it', async () => {
    const s = await serverWith(dir, '/ddn');
    try {
      const res = await injectChecked(s, { method: 'GET', url: '/ddn/explorer/did/did:platform:abc' });
      assert.equal(res.statusCode, 200);
      assert.match(res.body, /data-base="\/ddn\/explorer" data-api="\/ddn"/);
      assert.match(res.body, /src="\/ddn\/explorer\/assets\/app\.js"/);
      assert.match(res.body, /href="\/ddn\/explorer\/assets\/app\.css"/);
    } finally {
      await s.fastify.close();
    }
  });

  it('without a built bundle: a notice on the page, 404 for the files', async () => {
    const s = await serverWith(join(dir, 'missing'));
    try {
      const res = await injectChecked(s, { method: 'GET', url: '/explorer' });
      assert.equal(res.statusCode, 200);
      assert.match(res.body, /The explorer bundle is not built: run <code>npm run build<\/code>/);
      assert.doesNotMatch(res.body, /<script/);
      const js = await injectChecked(s, { method: 'GET', url: '/explorer/assets/app.js' });
      assert.equal(js.statusCode, 404);
      assert.equal(js.json().code, 'not_found');
    } finally {
      await s.fastify.close();
    }
  });
});
