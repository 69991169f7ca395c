/**
 * Lookups over several Directory base URLs (src/base/failover.ts): HttpDirectoryPort, the event policy source and
 * the SDK's failover fetch against real HTTP servers on port 0 — one refusing connections, one answering 500, one
 * never answering, one answering HTML, and good ones. Each server counts the requests it got.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { pino } from 'pino';
import { isDdnError } from '../../src/base/errors.js';
import { RequestFailedError } from '../../src/client/deadline-fetch.js';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { HttpDirectoryPort } from '../../src/adapters/directory-port-http.js';
import { failoverFetch } from '../../src/adapters/failover-fetch.js';
import { DirectoryApiError } from '../../src/client/http.js';
import { HttpPolicySource } from '../../src/adapters/http-policy-source.js';

const DID = 'did:platform:2222222222222222';

interface TestServer {
  url: string;
  /** Requests received. */
  hits: number;
  /** What the server answers now (tests switch it). */
  mode: 'good' | 'error' | 'hang' | 'html' | 'not_found';
  close(): Promise<void>;
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A stand-in Directory answering `/aliases/{a}` and `/policies/v3/did/{did}` according to its mode. */
function answer(s: TestServer, req: IncomingMessage, res: ServerResponse): void {
  s.hits++;
  if (s.mode === 'hang') return;
  if (s.mode === 'error') return reply(res, 500, { code: 'internal_error', error: 'internal_error', message: 'boom' });
  if (s.mode === 'html') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy</html>');
  if (s.mode === 'not_found') return reply(res, 404, { code: 'did_not_found', error: 'did_not_found', message: 'no' });
  const url = req.url ?? '';
  if (url === '/aliases/known') return reply(res, 200, { alias: 'known', did: DID, served_by: s.url });
  if (url.startsWith('/aliases/')) return reply(res, 404, { code: 'alias_not_found', error: 'alias_not_found', message: 'no' });
  if (url.startsWith('/policies/v3/did/')) return reply(res, 200, { policy: { served_by: s.url } });
  return reply(res, 404, { code: 'route_not_found', error: 'route_not_found', message: 'no' });
}

async function serve(mode: TestServer['mode']): Promise<TestServer> {
  const sockets = new Set<Socket>();
  let server: Server;
  const s: TestServer = {
    url: '',
    hits: 0,
    mode,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  server = createServer((req, res) => answer(s, req, res));
  server.on('connection', (socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  s.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return s;
}

/** A URL nothing listens on: a server's port, closed. */
async function refusingUrl(): Promise<string> {
  const s = await serve('good');
  await s.close();
  return s.url;
}

const lookupFailed = (e: unknown) => isDdnError(e) && e.code === 'policy_lookup_failed';

describe('Directory failover over several base URLs', () => {
  let refused: string;
  let error: TestServer;
  let good: TestServer;
  let other: TestServer;
  let hang: TestServer;
  let html: TestServer;
  let notFound: TestServer;

  before(async () => {
    refused = await refusingUrl();
    [error, good, other, hang, html, notFound] = await Promise.all((['error', 'good', 'good', 'hang', 'html', 'not_found'] as const).map((m) => serve(m)));
  });
  after(async () => {
    for (const s of [error, good, other, hang, html, notFound]) await s.close();
  });

  const reset = (...modes: [TestServer, TestServer['mode']][]) => {
    for (const s of [error, good, other, hang, html, notFound]) s.hits = 0;
    for (const [s, m] of modes) s.mode = m;
  };

  it('moves past a refusing and a failing base to one that answers, then starts there', async () => {
    reset();
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const port = new HttpDirectoryPort([refused, `${error.url}/`, good.url], { logger });
    assert.equal(port.currentBase, refused);
    assert.equal(await port.lookupAlias('known'), DID);
    assert.deepEqual([error.hits, good.hits], [1, 1]);
    assert.equal(port.currentBase, good.url);
    assert.equal(await port.lookupAlias('known'), DID);
    assert.equal(await port.lookupAlias('unknown'), null);
    assert.deepEqual([error.hits, good.hits], [1, 3], 'the remembered base is asked first');
    assert.deepEqual(
      lines.map((l) => [l.component, l.msg, (l.failed as { base?: string } | undefined)?.base ?? l.base]),
      [
        ['directory-port', 'base URL failed; trying the next', refused],
        ['directory-port', 'base URL failed; trying the next', error.url],
        ['directory-port', 'switched to another base URL', good.url],
      ],
    );
  });

  it('moves on from a base that times out or answers without JSON', async () => {
    reset();
    const port = new HttpDirectoryPort([hang.url, html.url, good.url], { timeoutMs: 200 });
    assert.equal(await port.lookupAlias('known'), DID);
    assert.deepEqual([hang.hits, html.hits, good.hits], [1, 1, 1]);
  });

  it('goes around the list when the remembered base fails later', async () => {
    reset([other, 'error']);
    const port = new HttpDirectoryPort([other.url, good.url]);
    assert.equal(await port.lookupAlias('known'), DID);
    assert.equal(port.currentBase, good.url);
    reset([other, 'good'], [good, 'error']);
    assert.equal(await port.lookupAlias('known'), DID);
    assert.equal(port.currentBase, other.url);
    assert.deepEqual([good.hits, other.hits], [1, 1]);
    good.mode = 'good';
  });

  it('takes a 404 did_not_found from the first base that answers as final', async () => {
    reset();
    const port = new HttpDirectoryPort([refused, notFound.url, good.url]);
    assert.equal(await port.resolveDelivery(DID, null, null), null);
    assert.equal(await port.getDid(DID), null);
    assert.deepEqual([notFound.hits, good.hits], [2, 0]);
  });

  it('is policy_lookup_failed when every base fails, naming each attempt', async () => {
    reset();
    const port = new HttpDirectoryPort([refused, error.url]);
    const err = await port.resolveDelivery(DID, null, null).catch((e: unknown) => e);
    assert.ok(lookupFailed(err), String(err));
    assert.ok(isDdnError(err));
    const attempts = err.details?.attempts as { base: string; status?: number; error?: string }[];
    assert.deepEqual(
      attempts.map((a) => [a.base, a.status ?? 'error']),
      [
        [refused, 'error'],
        [error.url, 500],
      ],
    );
    assert.equal(err.details?.code, 'internal_error');
    await assert.rejects(new HttpDirectoryPort([refused]).lookupAlias('known'), lookupFailed);
    assert.equal(error.hits, 1);
  });

  it('fails over in the event policy source too', async () => {
    reset();
    const source = new HttpPolicySource([refused, error.url, good.url]);
    assert.deepEqual(await source.policy({ type: 'DID', id: DID }), { served_by: good.url });
    await assert.rejects(new HttpPolicySource([refused, error.url]).policy({ type: 'DID', id: DID }), lookupFailed);
  });

  it('fails over in the SDK through failoverFetch, and hands back the last 5xx when every base fails', async () => {
    reset();
    const client = new DirectoryClient(refused, { fetch: failoverFetch([refused, error.url, good.url]) });
    assert.equal((await client.aliasLookup('known')).did, DID);
    assert.equal(good.hits, 1);
    const down = new DirectoryClient(refused, { fetch: failoverFetch([refused, error.url]) });
    const err = await down.aliasLookup('known').catch((e: unknown) => e);
    assert.ok(err instanceof DirectoryApiError && err.status === 500 && err.retryable, String(err));
    // the SDK's fetch names the URL it could not reach
    await assert.rejects(new DirectoryClient(refused, { fetch: failoverFetch([refused]) }).aliasLookup('known'), RequestFailedError);
  });
});
