/**
 * The frames of `GET /export/stream` are in the served OpenAPI documents (`x-websocket-frames`, src/wire/feed.ts):
 * every text frame a live stream sends — at a Directory and at a mirror following it, backfill and live —
 * validates against the description its server serves, and the description refuses what the stream never sends.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { checkContract, stopChecking } from '../support/contract-check.js';
import { caughtUp, feedHead, registerAndChange, startTestMirror, type TestMirror } from '../support/mirror.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { OpenApiChecker, type OpenApiDocument } from '../support/openapi-check.js';
import { waitFor } from '../support/wait.js';

type Line = Record<string, unknown> & { seq: number };

/** The frames `url`'s stream sends from `cursor` until one reaches seq `head`. */
async function frames(url: string, cursor: number, head: number, during?: () => Promise<void>): Promise<unknown[]> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/export/stream?cursor=${cursor}`);
  const got: unknown[] = [];
  ws.on('message', (d, binary) => got.push(binary ? { binary: true } : JSON.parse(String(d))));
  try {
    await during?.();
    const last = during === undefined ? head : await feedHead(url);
    await waitFor(`frames up to seq ${last}`, async () => (got.some((f) => (f as Line).seq >= last) ? true : undefined));
    return got;
  } finally {
    ws.close();
  }
}

async function checkerOf(url: string): Promise<OpenApiChecker> {
  return new OpenApiChecker((await (await fetch(`${url}/openapi.json`)).json()) as OpenApiDocument);
}

describe('GET /export/stream frames against the served documents', () => {
  let primary: TestNode;
  let mirror: TestMirror;

  before(async () => {
    primary = await startTestNode(['--roles', 'directory', '--block-time-ms', '20']);
    await registerAndChange(primary.urls.directory!, 131, 'frames');
    mirror = await startTestMirror(primary.urls.directory!);
    await checkContract([mirror.url]);
    await caughtUp(mirror, primary.urls.directory!);
  });
  after(async () => {
    if (mirror !== undefined) {
      await mirror.stop();
      stopChecking([mirror.url]);
    }
    await primary?.stop();
  });

  it("the Directory's stream: every frame, backfill and live, is a feed line as its document describes", async () => {
    const url = primary.urls.directory!;
    const checker = await checkerOf(url);
    const got = await frames(url, 0, 0, () => registerAndChange(url, 133, 'frames-live').then(() => undefined));
    const problems = got.map((f) => checker.frameProblem('/export/stream', f)).filter((p) => p !== undefined);
    assert.deepEqual(problems, []);
    const lines = got as Line[];
    assert.ok(lines.length >= 8 && lines.every((l) => l.tx_hash !== undefined), 'lines of extrinsics');
    assert.deepEqual(
      lines.map((l) => l.seq),
      lines.map((_, i) => i + 1),
      'in seq order from the cursor',
    );
  });

  it("a mirror's stream: every frame is a feed line as the mirror's document describes", async () => {
    const head = await caughtUp(mirror, primary.urls.directory!);
    const checker = await checkerOf(mirror.url);
    const got = await frames(mirror.url, 0, head);
    assert.ok(got.length >= head);
    assert.deepEqual(
      got.map((f) => checker.frameProblem('/export/stream', f)).filter((p) => p !== undefined),
      [],
    );
  });

  it('the description refuses what the stream never sends, and names its close codes', async () => {
    const url = primary.urls.directory!;
    const checker = await checkerOf(url);
    const tx = (await frames(url, 0, 1))[0] as Line;
    assert.equal(checker.frameProblem('/export/stream', tx), undefined);
    // the line of a block without extrinsics (a PostgreSQL producer's block recording drops): seq and block only
    assert.equal(checker.frameProblem('/export/stream', { seq: tx.seq, block: tx.block }), undefined);
    const { tx_hash: _hash, ...noHash } = tx;
    for (const wrong of [{ ...tx, extra: 1 }, noHash, { ...tx, seq: '1' }, { ...tx, payload: 'zz' }, { seq: tx.seq }, { binary: true }]) {
      assert.notEqual(checker.frameProblem('/export/stream', wrong), undefined, JSON.stringify(wrong).slice(0, 80));
    }
    const doc = (await (await fetch(`${url}/openapi.json`)).json()) as { paths: Record<string, { get: Record<string, unknown> }> };
    const closes = doc.paths['/export/stream']!.get['x-websocket-close'] as { code: number; reason: string }[];
    assert.deepEqual(
      closes.map((c) => `${c.code} ${c.reason}`),
      ['1008 consumer_too_slow', '1011 internal_error', '1001 server_closing'],
    );
    assert.equal(checker.frameProblem('/export', tx), 'GET /export: no frames described');
  });
});
