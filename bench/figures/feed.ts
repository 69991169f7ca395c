/**
 * The export feed and a mirror (docs/mirrors.md). While a stream of DID registrations goes to the service's
 * Directory, a mirror (`startMirror`, in the bench's process) follows its `/export/stream`: the mirror lag is, per
 * registration, the time from the Directory's 202 to the mirror holding it verified (block time included). Then
 * the export throughput: the whole feed read again and again with `GET /export` pages of 1,000 lines for the
 * figure's duration, in extrinsics (operations) per second.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import WebSocket from 'ws';
import { startMirror } from '../../src/app/mirror.js';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { didDocumentFor, generateKeyPair } from '../../src/client/keys.js';
import { FEED_HEAD_HEADER } from '../../src/directory/export-routes.js';
import { generateDid } from '../../src/protocol/did.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { round } from '../proc.js';
import type { BenchContext, Figure } from '../context.js';

/** Registrations in flight at once during the lag measurement. */
const CONCURRENCY = 4;

const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function feedHead(url: string): Promise<number> {
  const res = await fetch(`${url}/export?count=1`);
  await res.arrayBuffer();
  return Number(res.headers.get(FEED_HEAD_HEADER));
}

/** Reads the stream's backfill from cursor 0 up to `head`; resolves with the lines read. */
function streamBackfill(url: string, head: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/export/stream?cursor=0`);
    let n = 0;
    ws.on('message', () => {
      if (++n < head) return;
      ws.close();
      resolve(n);
    });
    ws.on('error', reject);
    ws.on('close', () => resolve(n));
  });
}

export async function feedFigures(ctx: BenchContext): Promise<Figure[]> {
  const url = ctx.service.urls.directory;
  const profile = makeProfile(ctx.profile);
  const client = new DirectoryClient(url, { profile });
  const dir = mkdtempSync(join(tmpdir(), 'ddn-bench-mirror-'));
  const mirror = await startMirror({ from: url, dataDir: dir, host: '127.0.0.1', port: 0, logger: pino({ level: 'silent' }) });
  try {
    // the mirror first catches up with what the bench registered before
    const head0 = await feedHead(url);
    await new Promise<void>((resolve) => {
      const check = () => mirror.follower.seq >= head0 && (stop(), resolve());
      const stop = mirror.follower.onProgress(check);
      check();
    });

    const changes = ctx.settings.quick ? 100 : 400;
    const pending = new Map<string, number>();
    const lags: number[] = [];
    const stopWatching = mirror.follower.onProgress(() => {
      const now = performance.now();
      for (const [tx, t0] of pending) {
        if (mirror.ledger.txView(tx) === undefined) continue;
        lags.push(now - t0);
        pending.delete(tx);
      }
    });
    ctx.log(`  ${changes} registrations, ${CONCURRENCY} at a time, followed by a mirror`);
    let next = 0;
    const worker = async () => {
      while (next < changes) {
        next++;
        const key = generateKeyPair();
        const did = generateDid(profile);
        const { tx_hash } = await client.register({ did, key, didDocument: didDocumentFor(did, key.publicKey) });
        pending.set(tx_hash, performance.now());
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const submitS = (performance.now() - t0) / 1000;
    for (let i = 0; pending.size > 0 && i < 600; i++) await new Promise((r) => setTimeout(r, 100));
    stopWatching();
    if (pending.size > 0) throw new Error(`the mirror never held ${pending.size} of the registrations`);
    lags.sort((a, b) => a - b);

    // export throughput: whole-feed reads, page after page, for the figure's duration
    const head = await feedHead(url);
    let lines = 0;
    let after = 0;
    const tRead = performance.now();
    const until = tRead + ctx.settings.durationS * 1000;
    while (performance.now() < until) {
      const text = await (await fetch(`${url}/export?after=${after}&count=1000`)).text();
      const n = text === '' ? 0 : text.split('\n').length - 1;
      lines += n;
      after = n === 0 || after + n >= head ? 0 : after + n;
    }
    const readS = (performance.now() - tRead) / 1000;
    // the same over the WebSocket stream: backfills from cursor 0, one after another
    let streamed = 0;
    const tStream = performance.now();
    while (performance.now() < tStream + ctx.settings.durationS * 1000) streamed += await streamBackfill(url, head);
    const streamS = (performance.now() - tStream) / 1000;
    return [
      {
        id: 'export_feed_ops_per_s',
        title: 'Directory: export feed read with GET /export pages of 1,000',
        value: round(lines / readS, 0),
        unit: 'ops/s',
        reference: 'hello_world_rps',
        extra: { feed_lines: head, lines_read: lines, stream_backfill_ops_per_s: round(streamed / streamS, 0) },
      },
      {
        id: 'mirror_lag_ms',
        title: 'Mirror lag: Directory 202 → verified at the mirror (p50, block time included)',
        value: round(percentile(lags, 50), 1),
        unit: 'ms',
        extra: { p90_ms: round(percentile(lags, 90), 1), p99_ms: round(percentile(lags, 99), 1), max_ms: round(lags[lags.length - 1]!, 1), changes, changes_per_s: round(changes / submitS, 1) },
      },
    ];
  } finally {
    await mirror.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
