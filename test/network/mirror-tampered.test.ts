/**
 * A mirror fed a block that does not verify (docs/mirrors.md): a stand-in primary serves a real Directory's genesis
 * and export feed with one extrinsic's bytes changed. The mirror imports the blocks before it, stops following at
 * that block for good, keeps serving what it verified, and says so in `GET /mirror/status` and `GET /metrics`.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { WebSocketServer } from 'ws';
import { registerAndChange, startTestMirror, type TestMirror } from '../support/mirror.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { waitFor } from '../support/wait.js';

/** A primary that answers `/export/genesis` with `genesis` and streams `lines` on `/export/stream`, one per frame. */
async function standInPrimary(genesis: string, lines: readonly string[]): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.url === '/export/genesis') res.writeHead(200, { 'content-type': 'application/json' }).end(genesis);
    else res.writeHead(404, { 'content-type': 'application/json' }).end('{"code":"not_found"}');
  });
  const wss = new WebSocketServer({ server, path: '/export/stream' });
  wss.on('connection', (ws) => {
    for (const line of lines) ws.send(line);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((r) => wss.close(() => r()));
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('a mirror fed a block that does not verify', () => {
  let primary: TestNode;
  let standIn: Awaited<ReturnType<typeof standInPrimary>>;
  let mirror: TestMirror;
  let tamperedSeq: number;
  let tamperedBlock: number;

  before(async () => {
    primary = await startTestNode(['--roles', 'directory']);
    await registerAndChange(primary.urls.directory!, 71, 'tampered');
    const genesis = await (await fetch(`${primary.urls.directory}/export/genesis`)).text();
    const feed = (await (await fetch(`${primary.urls.directory}/export?after=0&count=1000`)).text()).split('\n').filter((l) => l.length > 0);
    // the last extrinsic's payload with one hex digit changed: still well-formed, no longer what was signed
    const at = feed.findLastIndex((l) => (JSON.parse(l) as { index?: number }).index !== undefined);
    const line = JSON.parse(feed[at]!) as { seq: number; payload: string; block: { number: number } };
    const last = line.payload.at(-1) === '0' ? '1' : '0';
    feed[at] = JSON.stringify({ ...line, payload: `${line.payload.slice(0, -1)}${last}` });
    tamperedSeq = line.seq;
    tamperedBlock = line.block.number;
    standIn = await standInPrimary(genesis, feed);
    mirror = await startTestMirror(standIn.url);
  });
  after(async () => {
    await mirror?.stop();
    await standIn?.close();
    await primary?.stop();
  });

  it('stops at that block, keeps what came before, and reports it in /mirror/status, /metrics and /health', async () => {
    const error = await waitFor('the mirror stops following', async () => mirror.follower.status().error);
    assert.equal(error, `block ${tamperedBlock}: its extrinsics do not match its extrinsics root`);
    assert.ok(mirror.follower.seq < tamperedSeq, `holds ${mirror.follower.seq}, the tampered line is ${tamperedSeq}`);
    assert.equal(mirror.ledger.headNumber, tamperedBlock - 1, 'every block before the tampered one imported');
    const status = (await (await fetch(`${mirror.url}/mirror/status`)).json()) as { error?: string; seq: number };
    assert.equal(status.error, error);
    assert.equal(status.seq, mirror.follower.seq);
    const metrics = await (await fetch(`${mirror.url}/metrics`)).text();
    assert.match(metrics, /^ddn_mirror_verification_failed 1$/m);
    assert.match(metrics, new RegExp(`^ddn_mirror_feed_seq ${mirror.follower.seq}$`, 'm'));
    // out of rotation: /health is no longer 200 once following stopped
    const health = await fetch(`${mirror.url}/health`);
    assert.equal(health.status, 503);
    assert.equal(((await health.json()) as { code?: string }).code, 'ledger_unavailable');
    // what it verified is still served
    const block = await fetch(`${mirror.url}/blocks/${tamperedBlock - 1}`);
    assert.equal(block.status, 200);
    await block.arrayBuffer();
  });
});
