/**
 * Fair export streams (docs/mirrors.md, docs/public-node.md): a client address gets its share of the sessions and
 * no more; a consumer that never reads — its socket buffers absorb the whole feed, so no page is ever left
 * unwritten — is closed because it does not answer pings; when every session is taken, a consumer that reads
 * takes the place of one that does not; a consumer that reads keeps its session. Real nodes, real sockets, clients
 * from several loopback addresses.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import WebSocket from 'ws';
import { registerAndChange } from '../support/mirror.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { nonReadingClient, writePong, type RawUpgrade } from '../support/stream-clients.js';
import { waitFor } from '../support/wait.js';
import { scrape, total } from '../support/metrics.js';

const nodes: TestNode[] = [];
const sockets: RawUpgrade[] = [];
after(async () => {
  for (const s of sockets) s.socket.destroy();
  for (const n of nodes) await n.stop();
});

async function node(...flags: string[]): Promise<{ node: TestNode; port: number }> {
  const n = await startTestNode(['--roles', 'directory', ...flags]);
  nodes.push(n);
  return { node: n, port: Number(new URL(n.urls.directory!).port) };
}

async function upgrade(port: number, from: string): Promise<RawUpgrade> {
  const u = await nonReadingClient(port, from);
  sockets.push(u);
  return u;
}

/** A client that reads: the lines it got, and the pings it answered. */
function reader(url: string): { ws: WebSocket; lines: string[]; pings: () => number; opened: Promise<void> } {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/export/stream?cursor=0`);
  const lines: string[] = [];
  let pings = 0;
  ws.on('message', (m) => lines.push(String(m)));
  ws.on('ping', () => pings++);
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
    ws.once('error', reject);
  });
  return { ws, lines, pings: () => pings, opened };
}

describe('fair export streams', () => {
  it('gives a client address its share of the sessions, and refuses more with 503 and Retry-After', async () => {
    const { node: n, port } = await node('--export-stream-max-sessions-per-address', '2', '--export-stream-ping-interval-ms', '600000');
    assert.equal((await upgrade(port, '127.0.0.2')).status, 101);
    assert.equal((await upgrade(port, '127.0.0.2')).status, 101);
    const third = await upgrade(port, '127.0.0.2');
    assert.equal(third.status, 503);
    assert.match(third.headers, /\r\nRetry-After: 5\r\n/i);
    assert.equal(third.body?.code, 'service_unavailable');
    assert.deepEqual(third.body?.details, { reason: 'export_stream_address_share', limit: 2, retry_after_seconds: 5 });
    // another address has its own share
    assert.equal((await upgrade(port, '127.0.0.3')).status, 101);
    const m = await scrape(n.urls.directory!);
    assert.equal(total(m, 'ddn_export_stream_sessions'), 3);
    assert.equal(total(m, 'ddn_export_stream_refused_total', { reason: 'address_share' }), 1);
  });

  it('closes a consumer that never reads though its buffers absorb the feed, and keeps one that reads', async () => {
    const { node: n } = await node('--export-stream-ping-interval-ms', '100');
    await registerAndChange(n.urls.directory!, 91, 'fair-feed');
    const port = Number(new URL(n.urls.directory!).port);
    const idle = await upgrade(port, '127.0.0.4');
    assert.equal(idle.status, 101);
    // one that never reads either, but sends pongs of its own all the time: they answer no ping
    const faking = await upgrade(port, '127.0.0.4');
    assert.equal(faking.status, 101);
    const fake = setInterval(() => writePong(faking.socket, Buffer.from('pong')), 5);
    const r = reader(n.urls.directory!);
    await r.opened;
    try {
      await waitFor('both non-reading consumers are closed', async () =>
        total(await scrape(n.urls.directory!), 'ddn_export_stream_closed_total', { reason: 'not_reading' }) === 2 ? true : undefined,
      );
    } finally {
      clearInterval(fake);
    }
    // the reader answered every ping meanwhile and stays: it still gets what is new
    await waitFor('the reader answered a few pings', async () => (r.pings() >= 3 ? true : undefined));
    const before = r.lines.length;
    await registerAndChange(n.urls.directory!, 93, 'fair-other');
    await waitFor('the reader gets the new lines', async () => (r.lines.length > before ? true : undefined));
    assert.equal(r.ws.readyState, WebSocket.OPEN);
    const m = await scrape(n.urls.directory!);
    assert.equal(total(m, 'ddn_export_stream_sessions'), 1);
    assert.equal(total(m, 'ddn_export_stream_closed_total', { reason: 'not_reading' }), 2);
    r.ws.close();
  });

  it('lets a consumer that reads take the place of one that does not when every session is taken', async () => {
    // pings never fall due here: only the displacement (a ping unanswered for 5 s) can make room
    const { node: n, port } = await node('--export-stream-max-sessions', '3', '--export-stream-ping-interval-ms', '600000');
    await registerAndChange(n.urls.directory!, 95, 'displaced');
    for (const from of ['127.0.0.5', '127.0.0.6', '127.0.0.7']) assert.equal((await upgrade(port, from)).status, 101);
    const full = await upgrade(port, '127.0.0.8');
    assert.equal(full.status, 503);
    assert.deepEqual(full.body?.details, { reason: 'export_stream_sessions', limit: 3, retry_after_seconds: 5 });
    const r = await waitFor(
      'a reader gets a session',
      async () => {
        const attempt = reader(n.urls.directory!);
        try {
          await attempt.opened;
          return attempt;
        } catch {
          attempt.ws.terminate();
          return undefined;
        }
      },
      { tries: 600, everyMs: 100 },
    );
    await waitFor('the reader gets the feed', async () => (r.lines.length > 0 ? true : undefined));
    const m = await scrape(n.urls.directory!);
    assert.equal(total(m, 'ddn_export_stream_sessions'), 3);
    assert.equal(total(m, 'ddn_export_stream_closed_total', { reason: 'not_reading' }), 1);
    r.ws.close();
  });
});
