/**
 * The export feed (docs/mirrors.md) over real HTTP on a real node: `GET /export` pages and their validation,
 * `GET /export/genesis`, and `GET /export/stream` — backfill then live, refused upgrades, and the close of a
 * consumer that cannot keep up.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { parseHex, to0x } from '../../src/base/bytes.js';
import { blockHash } from '../../src/ledger/block.js';
import { txHashOf } from '../../src/ledger/extrinsic.js';
import { parseFeedLine, type FeedLineJson } from '../../src/ledger/feed.js';
import { ExportFeed } from '../../src/directory/export-feed.js';
import { FeedStreamSession, SLOW_CONSUMER_CLOSE, type FeedSink } from '../../src/directory/export-stream.js';
import { FEED_HEAD_HEADER } from '../../src/directory/export-routes.js';
import { registerAndChange } from '../support/mirror.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { waitFor } from '../support/wait.js';
import { checkAnswer } from '../support/contract-check.js';

async function page(url: string, query: string): Promise<{ status: number; type: string | null; head: number; lines: FeedLineJson[]; body: string }> {
  const res = await fetch(`${url}/export${query}`);
  const body = await res.text();
  const lines =
    res.status === 200 && body !== ''
      ? body
          .trimEnd()
          .split('\n')
          .map((l) => JSON.parse(l) as FeedLineJson)
      : [];
  return { status: res.status, type: res.headers.get('content-type'), head: Number(res.headers.get(FEED_HEAD_HEADER)), lines, body };
}

describe('the export feed', () => {
  let node: TestNode;
  let url: string;
  let all: FeedLineJson[];

  before(async () => {
    node = await startTestNode(['--roles', 'directory']);
    url = node.urls.directory!;
    await registerAndChange(url, 61, 'exported');
    await registerAndChange(url, 71, 'exported-too');
    all = (await page(url, '')).lines;
  });
  after(async () => node?.stop());

  it('lists every finalized extrinsic in order, each verifiable from its line', async () => {
    const first = await page(url, '');
    assert.equal(first.type, 'application/jsonl; charset=utf-8');
    assert.ok(all.length >= 8);
    assert.equal(first.head, all[all.length - 1]!.seq);
    all.forEach((l, i) => assert.equal(l.seq, i + 1));
    for (const l of all) {
      const parsed = parseFeedLine(l);
      assert.equal(to0x(parsed.block.hash), l.block.hash);
      assert.equal(to0x(blockHash(parsed.block.header)), l.block.hash, 'the header hashes to the block hash');
      assert.equal(to0x(txHashOf(parseHex(l.payload!)!)), l.tx_hash, 'the payload hashes to the tx hash');
      assert.match(l.signature!, /^0x[0-9a-f]{128}$/);
      assert.equal(l.success, true);
    }
    assert.equal(all[0]!.extrinsic, 'register_with_proof_v2');
    // each block's parent is the block before it
    const blocks = [...new Map(all.map((l) => [l.block.number, l.block])).values()];
    for (let i = 1; i < blocks.length; i++) if (blocks[i]!.number === blocks[i - 1]!.number + 1) assert.equal(blocks[i]!.parent_hash, blocks[i - 1]!.hash);
  });

  it('pages with after and count', async () => {
    const a = await page(url, '?count=3');
    assert.deepEqual(a.lines, all.slice(0, 3));
    const b = await page(url, `?after=${a.lines[2]!.seq}&count=1000`);
    assert.deepEqual(b.lines, all.slice(3));
    const end = await page(url, `?after=${all[all.length - 1]!.seq}`);
    assert.equal(end.status, 200);
    assert.equal(end.body, '');
  });

  it('refuses a bad after or count with a stable code', async () => {
    for (const [query, code] of [
      ['?after=-1', 'invalid_cursor'],
      ['?after=abc', 'invalid_cursor'],
      ['?after=01', 'invalid_cursor'],
      ['?after=99999999999999999999', 'invalid_cursor'],
      ['?count=0', 'invalid_count'],
      ['?count=1001', 'invalid_count'],
      ['?count=ten', 'invalid_count'],
    ] as const) {
      const res = await fetch(`${url}/export${query}`);
      assert.equal(res.status, 400, query);
      assert.equal(((await res.json()) as { code: string }).code, code, query);
    }
  });

  it('serves the genesis parameters a follower starts from', async () => {
    const g = (await (await fetch(`${url}/export/genesis`)).json()) as { genesis_hash: string; chain_id: string; persona_attestors: string[] };
    const health = (await (await fetch(`${url}/health`)).json()) as { genesis_hash: string; chain_id: string };
    assert.equal(g.genesis_hash, health.genesis_hash);
    assert.equal(g.chain_id, health.chain_id);
    assert.equal(g.persona_attestors.length, 1);
  });

  it('streams the backfill from a cursor, then new entries live', async () => {
    const cursor = all[2]!.seq;
    const ws = new WebSocket(`${url.replace('http', 'ws')}/export/stream?cursor=${cursor}`);
    const got: FeedLineJson[] = [];
    ws.on('message', (d) => got.push(JSON.parse(String(d)) as FeedLineJson));
    try {
      await waitFor('the backfill', async () => (got.length >= all.length - 3 ? true : undefined));
      assert.deepEqual(got, all.slice(3));
      await registerAndChange(url, 81, 'streamed');
      const now = (await page(url, `?after=${all[all.length - 1]!.seq}`)).lines;
      assert.ok(now.length >= 4);
      await waitFor('the live entries', async () => (got.length >= all.length - 3 + now.length ? true : undefined));
      assert.deepEqual(got, [...all.slice(3), ...now]);
    } finally {
      ws.close();
    }
  });

  it('refuses an upgrade with a bad cursor or on another path', async () => {
    for (const [path, status, code] of [
      ['/export/stream?cursor=x', 400, 'invalid_cursor'],
      ['/export/elsewhere', 404, 'not_found'],
    ] as const) {
      const ws = new WebSocket(`${url.replace('http', 'ws')}${path}`);
      const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        ws.on('unexpected-response', (_req, r) => {
          let body = '';
          r.on('data', (c: Buffer) => (body += c.toString()));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
        });
        ws.on('open', () => reject(new Error('upgraded')));
        ws.on('error', () => undefined);
      });
      assert.equal(res.status, status, path);
      assert.equal((JSON.parse(res.body) as { code: string }).code, code, path);
      // the refusal's code is one the route's OpenAPI entry lists for its status
      checkAnswer(`${url}${path}`, 'GET', res.status, JSON.parse(res.body));
    }
  });

  it("echoes the upgrade's request id in the 101 and in a refusal, and makes one up when none is sent", async () => {
    const upgrade = (path: string, headers: Record<string, string>) =>
      new Promise<{ status: number; id: string | undefined }>((resolve, reject) => {
        const ws = new WebSocket(`${url.replace('http', 'ws')}${path}`, { headers });
        ws.on('upgrade', (r) => {
          resolve({ status: r.statusCode ?? 0, id: r.headers['x-request-id'] as string | undefined });
          ws.close();
        });
        ws.on('unexpected-response', (_req, r) => {
          resolve({ status: r.statusCode ?? 0, id: r.headers['x-request-id'] as string | undefined });
          r.resume();
        });
        ws.on('error', (e) => reject(e));
      });
    assert.deepEqual(await upgrade('/export/stream?cursor=0', { 'X-Request-Id': 'stream-1' }), { status: 101, id: 'stream-1' });
    assert.deepEqual(await upgrade('/export/stream?cursor=x', { 'X-Request-Id': 'stream-2' }), { status: 400, id: 'stream-2' });
    const made = await upgrade('/export/stream?cursor=x', { 'X-Request-Id': 'not acceptable' });
    assert.equal(made.status, 400);
    assert.match(made.id ?? '', /^ws-[\w-]{8}$/);
  });

  it('closes a consumer that leaves a page unwritten (consumer_too_slow), holding one page at most', async () => {
    const feed = new ExportFeed(node.ledger, { profile: 'platform', chainId: 'x', genesisTimeMs: 0, personaAttestors: [] });
    const sent: string[] = [];
    let closed: { code: number; reason: string } | undefined;
    // a socket whose writes never complete: a peer that stopped reading
    const stuck: FeedSink = { send: (text) => void sent.push(text), close: (code, reason) => void (closed = { code, reason }) };
    const session = new FeedStreamSession(feed, stuck, 0, { pageSize: 4, stallMs: 20 });
    session.notify();
    await waitFor('the slow consumer is closed', async () => closed);
    assert.deepEqual(closed, SLOW_CONSUMER_CLOSE);
    assert.equal(sent.length, 4, 'nothing past the unwritten page was read');
    assert.equal(session.position, 0);
    // a consumer that keeps up gets everything
    const fast: string[] = [];
    const ok = new FeedStreamSession(feed, { send: (t, done) => (fast.push(t), setImmediate(done)), close: () => assert.fail('closed') }, 0, {
      pageSize: 4,
      stallMs: 60_000,
    });
    ok.notify();
    const everything = (await page(url, '')).lines;
    await waitFor('every line', async () => (fast.length === everything.length ? true : undefined));
    assert.deepEqual(
      fast.map((t) => JSON.parse(t) as FeedLineJson),
      everything,
    );
  });
});
