/**
 * `npm run bench:bigledger -- --dids N --data-dir DIR [--profile platform] [--chain-id ddn-dev] [--workers K]`
 *
 * Builds a large network quickly: a data directory whose embedded ledger holds `N` DIDs registered with real
 * Ed25519 keys and signatures, generated directly (not through HTTP admission). Worker threads derive each DID's
 * key from its index and sign its `register_with_proof_v2`; this thread admits them into the ledger's own pool
 * (which verifies every signature, as a Directory does) and produces blocks of 1,000 with the ledger's own block
 * production, so the blocks are exactly what a node would have made: `ddn serve --data-dir DIR` starts on them,
 * and a mirror following it verifies them as it would any other. The genesis and attestor key are created as
 * `ddn serve` creates them on a first start (same profile and chain id flags).
 *
 * Beside the ledger it writes `DIR/bench-dids.tsv`: one `DID<TAB>root key seed (hex)` a line, in registration
 * order — the bench reads its resolve set from it and signs updates with the seeds (the key of DID `i` is derived
 * from `i`, see bench/bigledger-worker.ts). Refuses a data directory whose ledger already has blocks.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { LEDGER_FILE } from '../src/app/ledger-backend.js';
import { loadNodeKeys } from '../src/app/node-keys.js';
import { systemClock } from '../src/base/clock.js';
import { startModuleWorker } from '../src/base/module-worker.js';
import { Ledger } from '../src/ledger/chain.js';
import { MAX_EXTRINSICS_PER_BLOCK } from '../src/ledger/types.js';
import { blockHash, extrinsicsRoot, resultsRoot, type BlockHeader } from '../src/ledger/block.js';
import { txHashOf } from '../src/ledger/extrinsic.js';
import { makeProfile } from '../src/protocol/profile.js';
import { openSqlite } from '../src/store/sqlite/database.js';
import { LEDGER_MIGRATIONS, SqliteLedgerStore } from '../src/store/sqlite/ledger-store.js';
import type { SignedRegistration, SignJob } from './bigledger-worker.js';

/** The file of generated DIDs and their root key seeds, in the data directory. */
export const BIG_DIDS_FILE = 'bench-dids.tsv';

export interface BigLedgerOptions {
  dids: number;
  dataDir: string;
  profile?: string;
  chainId?: string;
  workers?: number;
  log?: (msg: string) => void;
}

export interface BigLedgerResult {
  dids: number;
  blocks: number;
  seconds: number;
  dids_per_s: number;
  peak_rss_mib: number;
}

/** Asks a signing thread for its next batch. */
function nextBatch(w: Worker): Promise<SignedRegistration[]> {
  return new Promise((resolve, reject) => {
    const failed = (e: Error) => reject(e);
    w.once('error', failed);
    w.once('message', (m: SignedRegistration[]) => {
      w.off('error', failed);
      resolve(m);
    });
    w.postMessage('next');
  });
}

/**
 * The next block holding `regs`, built as the producer would (header over their hashes, every one a success),
 * then imported: the ledger executes each registration (signature verified) and stores the block only when the
 * outcomes and the hash come out as the header says.
 */
function importOne(ledger: Ledger, regs: readonly SignedRegistration[]): void {
  const head = ledger.headRef();
  const txHashes = regs.map((r) => txHashOf(r.bytes));
  const header: BlockHeader = {
    parentHash: Buffer.from(head.hash.slice(2), 'hex'),
    number: head.number + 1,
    timestampMs: Math.max(Date.now(), head.timestampMs + 1),
    extrinsicsRoot: extrinsicsRoot(txHashes),
    resultsRoot: resultsRoot(txHashes.map((txHash) => ({ txHash, success: true, error: '' }))),
  };
  const submittedAtMs = header.timestampMs;
  ledger.importBlock(
    { header, hash: blockHash(header) },
    regs.map((r) => ({ bytes: r.bytes, meta: { subject: r.did, action: 'register_did', limitKey: `${r.did}|registration` }, submittedAtMs })),
  );
}

export async function buildBigLedger(o: BigLedgerOptions): Promise<BigLedgerResult> {
  const t0 = performance.now();
  const log = o.log ?? (() => {});
  const profileName = o.profile ?? 'platform';
  const profile = makeProfile(profileName);
  const keys = loadNodeKeys(o.dataDir, { profile: profileName, chainId: o.chainId ?? 'ddn-dev' }, systemClock);
  const db = openSqlite(join(o.dataDir, LEDGER_FILE), LEDGER_MIGRATIONS, 'ledger');
  // what the build writes is on disk when it ends (a checkpoint and close below); nothing to lose meanwhile
  db.pragma('synchronous = OFF');
  const store = new SqliteLedgerStore(db);
  const batch = MAX_EXTRINSICS_PER_BLOCK;
  const ledger = new Ledger(store, { profile, genesis: keys.genesis, blockIntervalMs: 1000, finalityDepth: 0, clock: systemClock, autoProduce: false });
  if (ledger.headNumber !== 0) {
    db.close();
    throw new Error(`${o.dataDir} already holds a ledger with blocks: give an empty data directory`);
  }
  const n = Math.max(1, o.workers ?? Math.max(1, Math.min(4, cpus().length - 1)));
  const per = Math.ceil(o.dids / n);
  const workers = Array.from({ length: n }, (_, i) => {
    const job: SignJob = { profile: profileName, from: i * per, to: Math.min(o.dids, (i + 1) * per), batch, expiryAheadMs: 50 * 60_000 };
    return startModuleWorker(import.meta.url, 'bigledger-worker', job);
  });
  const out = openSync(join(o.dataDir, BIG_DIDS_FILE), 'w');
  let peakRss = process.memoryUsage().rss;
  let done = 0;
  let blocks = 0;
  let lastLog = 0;
  try {
    // each thread signs its next batch while this one admits and blocks the one before
    let pending = workers.map((w) => nextBatch(w));
    for (;;) {
      const batches = await Promise.all(pending);
      if (batches.every((b) => b.length === 0)) break;
      pending = workers.map((w) => nextBatch(w));
      for (const regs of batches) {
        if (regs.length === 0) continue;
        importOne(ledger, regs);
        blocks++;
        writeSync(out, regs.map((r) => `${r.did}\t${r.seedHex}\n`).join(''));
        done += regs.length;
      }
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      const s = (performance.now() - t0) / 1000;
      if (s - lastLog >= 10 || done >= o.dids) {
        lastLog = s;
        log(`${done.toLocaleString('en')} DIDs in ${blocks} blocks, ${s.toFixed(0)} s (${Math.round(done / s)}/s)`);
      }
    }
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
    closeSync(out);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.pragma('synchronous = FULL');
    db.close();
  }
  const seconds = (performance.now() - t0) / 1000;
  return { dids: done, blocks, seconds: Math.round(seconds), dids_per_s: Math.round(done / seconds), peak_rss_mib: Math.round(peakRss / 2 ** 20) };
}

function parseArgs(argv: string[]): BigLedgerOptions {
  const o: Partial<BigLedgerOptions> = {};
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i];
    const v = argv[++i];
    if (v === undefined) throw new Error(`${x} needs a value`);
    if (x === '--dids' || x === '--workers') {
      const k = Number(v);
      if (!Number.isInteger(k) || k < 1) throw new Error(`${x}: a positive whole number`);
      if (x === '--dids') o.dids = k;
      else o.workers = k;
    } else if (x === '--data-dir') o.dataDir = v;
    else if (x === '--profile') o.profile = v;
    else if (x === '--chain-id') o.chainId = v;
    else throw new Error(`unknown option ${x}\nusage: npm run bench:bigledger -- --dids N --data-dir DIR [--profile P] [--chain-id ID] [--workers K]`);
  }
  if (o.dids === undefined || o.dataDir === undefined) throw new Error('usage: npm run bench:bigledger -- --dids N --data-dir DIR');
  return o as BigLedgerOptions;
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, '/'))) {
  const o = parseArgs(process.argv.slice(2));
  buildBigLedger({ ...o, log: (m) => process.stderr.write(`[bigledger] ${m}\n`) }).then(
    (r) => process.stdout.write(`${JSON.stringify(r)}\n`),
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
