/**
 * `npx tsx bench/registration-scale-cpu.ts --small DIR --big DIR [--count 3000] [--warmup 1000] [--per-block 300]
 * [--group 16] [--rounds 3] [--settings default,cache=256,mmap=2048,thread] [--fresh-big] [--other TREE [--other-big DIR]]`
 *
 * A registration's CPU in the embedded ledger as the Directory grows (issue 39 item 3): in one process, no HTTP, the
 * admission and the block of fresh signed `register_with_proof_v2` (as `POST /register-did` submits them) on copies
 * of two ledgers built by bench/bigledger.ts — a small one (2,000 DIDs) and a big one (1,000,000) — by CPU counters,
 * interleaved small, big, small, big. The figure is the event loop's CPU per registration big ÷ small (what bounds
 * the HTTP figure, `--only resolve_scale`, without the load generator), beside the time the event loop was blocked
 * (wall − on a CPU − waiting for one, from schedstat: a checkpoint's fsync), which the machine's load does not
 * inflate as it does the wall time.
 *
 * Each measurement is a child process on one ledger with one setting of the ledger connection: `default` (what
 * the tree opens the ledger with: its `LedgerFile` when it has one, with the default storage reserve's `ledgerCheckpoints()` when it has them), `cache=MIB` (`PRAGMA cache_size`), `mmap=MIB`
 * (`PRAGMA mmap_size`), `ckpt=PAGES` (`PRAGMA wal_autocheckpoint`), `ckpt-ms=MS` and `rewind=FRAMES` (the checkpointer
 * thread's pass interval and WAL bound, `LedgerFile`'s `checkpoints`), `thread` (the checkpoints on their own thread
 * whatever the file's size, as `LedgerFile` runs them from 256 MiB), `warm` (the three indexes a registration inserted
 * into before session 49 read whole first: a node that has run a while; a registration no longer enters the history
 * index, src/store/sqlite/ledger-history.ts), joined with `+`. The registrations ADD to the ledgers (use
 * copies; the small one is copied afresh for each child, the big one grows by `warmup + count` a child, unless
 * `--fresh-big` copies it afresh too: for a ledger that must stay on its side of a size). Beside the CPU the child reports what it read and wrote through the OS per registration
 * (`/proc/self/io`: SQLite reads a page not in its cache with one `pread`), the page faults and its RSS.
 * With `--other TREE` each setting also runs on that tree's sources, for before/after pairs; `--other-big DIR` gives
 * that tree a copy of the big ledger of its own (needed when the two trees' migrations differ: the first child of
 * a tree with a newer migration changes the file it opens).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuMs } from './proc.js';
import type { Call } from '../src/ledger/extrinsic.js';
import type * as M_database from '../src/store/sqlite/database.js';
import type * as M_ledger_store from '../src/store/sqlite/ledger-store.js';
import type * as M_chain from '../src/ledger/chain.js';
import type * as M_node_keys from '../src/app/node-keys.js';
import type * as M_clock from '../src/base/clock.js';
import type * as M_profile from '../src/protocol/profile.js';
import type * as M_did from '../src/protocol/did.js';
import type * as M_keys from '../src/client/keys.js';
import type * as M_document from '../src/protocol/document.js';
import type * as M_document_json from '../src/protocol/document-json.js';
import type * as M_registration from '../src/protocol/payloads/registration.js';
import type * as M_hash from '../src/crypto/hash.js';
import type * as M_bigledger_worker from './bigledger-worker.js';
import type * as M_ledger_file from '../src/store/sqlite/ledger-file.js';
import type * as M_ledger_cache_size from '../src/store/ledger-cache-size.js';

const { values } = parseArgs({
  options: {
    small: { type: 'string' },
    big: { type: 'string' },
    count: { type: 'string', default: '3000' },
    warmup: { type: 'string', default: '1000' },
    'per-block': { type: 'string', default: '300' },
    group: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
    settings: { type: 'string', default: 'default' },
    other: { type: 'string' },
    'other-big': { type: 'string' },
    'fresh-big': { type: 'boolean', default: false },
    child: { type: 'string' },
    ledger: { type: 'string' },
    setting: { type: 'string' },
  },
});

interface Result {
  /** Whether the ledger's checkpoints ran on their own thread (`LedgerFile`; false without one). */
  checkpointer_thread: boolean;
  /** Wall time per registration: the CPU plus what the thread waited for (a checkpoint's fsync). */
  wall_us: number;
  /**
   * Of the wall time, what the event loop's thread spent neither running nor waiting for a CPU: blocked in a system
   * call (a checkpoint's fsync). Unlike the wall time, the machine's load does not inflate it (schedstat).
   */
  blocked_us: number;
  /** The event loop's thread alone (what bounds a node's rate); cpu_us is every thread's. */
  main_us: number;
  cpu_us: number;
  /**
   * Copying into the file, after the window, what the window committed and the checkpointer had not copied yet
   * (a passive checkpoint; 0 without the thread): its share of the window's checkpoints, left for later.
   */
  tail_us: number;
  admit_us: number;
  block_us: number;
  /** The event loop's thread alone in each part (schedstat), and the pages it read through the OS in each (`pread`). */
  admit_main_us: number;
  block_main_us: number;
  admit_main_reads: number;
  block_main_reads: number;
  /** read() calls and KiB read through the OS, page faults (minor + major), per registration. */
  reads: number;
  read_kib: number;
  faults: number;
  /** write() calls and KiB written (WAL frames, checkpoints), per registration. */
  writes: number;
  write_kib: number;
  rss_mib: number;
  cache_kib: number;
  mmap_mib: number;
}

/** The main thread's time on a CPU and waiting for one, ns (/proc/…/schedstat). */
function schedstat(): { run: number; wait: number } {
  const [run, wait] = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ').map(Number);
  return { run: run!, wait: wait! };
}

/** The event loop's thread's read() calls (/proc/…/task/…/io: not the checkpointer's). */
function mainReads(): number {
  return Number(/^syscr: (\d+)/m.exec(readFileSync(`/proc/self/task/${process.pid}/io`, 'utf8'))?.[1] ?? 0);
}

function procIo(): { syscr: number; rchar: number; syscw: number; wchar: number } {
  const t = readFileSync('/proc/self/io', 'utf8');
  const f = (k: string) => Number(new RegExp(`^${k}: (\\d+)`, 'm').exec(t)?.[1] ?? 0);
  return { syscr: f('syscr'), rchar: f('rchar'), syscw: f('syscw'), wchar: f('wchar') };
}

/** A partial index's condition as its schema states it (a query through the index must imply it). */
function partialCondition(q: (sql: string) => unknown, index: string): string {
  const sql = (q(`SELECT sql FROM sqlite_master WHERE name = '${index}'`) as { sql: string }).sql;
  return /\bWHERE\s+([\s\S]*?);?\s*$/i.exec(sql)![1]!;
}

/** Applies one `--settings` item to an open ledger database. */
function applySetting(db: { pragma(s: string): unknown }, setting: string): void {
  for (const part of setting.split('+')) {
    if (part === 'default' || part === 'thread' || /^(ckpt-ms|rewind)=\d+$/.test(part)) continue;
    if (part === 'warm') {
      // what a node that has run a while holds in its cache: the indexes a registration inserts into at random
      const q = (sql: string) => (db as unknown as { prepare(s: string): { get(): unknown } }).prepare(sql).get();
      // the hash index on the hash's first 8 bytes (ledger migration 6), or the one on the whole hash before it
      const hashIndex = q("SELECT 1 FROM sqlite_master WHERE name = 'ledger_txs_hash_key'") !== undefined ? 'ledger_txs_hash_key' : 'ledger_txs_hash';
      for (const [table, index, column] of [
        ['ledger_current', 'sqlite_autoindex_ledger_current_1', 'key'],
        ['ledger_txs', hashIndex, 'tx_hash'],
        ['ledger_txs', 'ledger_txs_history', 'subject'],
      ]) {
        if (index === 'ledger_txs_hash_key') q(`SELECT count(*) FROM ${table} INDEXED BY ${index}`);
        else
          q(
            `SELECT count(${column}) FROM ${table} INDEXED BY ${index} WHERE ${column} > ''${index === 'ledger_txs_history' ? ` AND ${partialCondition(q, index)}` : ''}`,
          );
      }
      continue;
    }
    const m = /^(cache|mmap|ckpt)=(\d+)$/.exec(part);
    if (m === null) throw new Error(`a setting is default, cache=MIB, mmap=MIB, ckpt=PAGES or joined with +: ${part}`);
    const n = Number(m[2]);
    if (m[1] === 'ckpt') db.pragma(`wal_autocheckpoint = ${n}`);
    else db.pragma(m[1] === 'cache' ? `cache_size = -${n * 1024}` : `mmap_size = ${n * 2 ** 20}`);
  }
}

async function child(root: string, dataDir: string, setting: string): Promise<void> {
  const at = (p: string) => pathToFileURL(resolve(root, p)).href;
  const imp = async <T>(p: string) => (await import(at(p))) as T;
  const { openSqlite } = await imp<typeof M_database>('src/store/sqlite/database.ts');
  const { LEDGER_MIGRATIONS, SqliteLedgerStore } = await imp<typeof M_ledger_store>('src/store/sqlite/ledger-store.ts');
  const { Ledger } = await imp<typeof M_chain>('src/ledger/chain.ts');
  const { loadNodeKeys } = await imp<typeof M_node_keys>('src/app/node-keys.ts');
  const { systemClock } = await imp<typeof M_clock>('src/base/clock.ts');
  const { makeProfile } = await imp<typeof M_profile>('src/protocol/profile.ts');
  const { generateDid } = await imp<typeof M_did>('src/protocol/did.ts');
  const { didDocumentFor } = await imp<typeof M_keys>('src/client/keys.ts');
  const { encodeDocument } = await imp<typeof M_document>('src/protocol/document.ts');
  const { parseDidDocument } = await imp<typeof M_document_json>('src/protocol/document-json.ts');
  const { registrationSigningBytes } = await imp<typeof M_registration>('src/protocol/payloads/registration.ts');
  const { blake2_256 } = await imp<typeof M_hash>('src/crypto/hash.ts');
  const { fastKeyPair } = await imp<typeof M_bigledger_worker>('bench/bigledger-worker.ts');

  const count = Number(values.count);
  const warmup = Number(values.warmup);
  const perBlock = Number(values['per-block']);
  const group = Number(values.group);
  const keys = loadNodeKeys(dataDir, { profile: 'platform', chainId: 'ddn-dev' }, systemClock);
  const profile = makeProfile(keys.genesis.profile);
  const path = join(dataDir, 'ledger.sqlite');
  // the tree's own opening of the node's ledger when it has one (its page cache, its checkpoints), else openSqlite's
  const file = existsSync(resolve(root, 'src/store/sqlite/ledger-file.ts'))
    ? await (async () => {
        const M = await imp<typeof M_ledger_file>('src/store/sqlite/ledger-file.ts');
        const { LedgerFile } = M;
        const { defaultLedgerCacheBytes } = await imp<typeof M_ledger_cache_size>('src/store/ledger-cache-size.ts');
        const parts = setting.split('+');
        const opt = (name: string) => {
          const v = parts.find((p) => p.startsWith(`${name}=`));
          return v === undefined ? undefined : Number(v.slice(name.length + 1));
        };
        const [intervalMs, rewindFrames] = [opt('ckpt-ms'), opt('rewind')];
        // the tree's own checkpoint tuning as a node opens it (from session 50 with the default storage reserve's
        // byte bound), but for what a setting names
        const tuning = M as { LEDGER_CHECKPOINTS?: object; ledgerCheckpoints?: () => object };
        const own = tuning.ledgerCheckpoints?.() ?? tuning.LEDGER_CHECKPOINTS ?? {};
        const checkpoints = { ...own, ...(intervalMs === undefined ? {} : { intervalMs }), ...(rewindFrames === undefined ? {} : { rewindFrames }) };
        return LedgerFile.open(path, defaultLedgerCacheBytes(totalmem()), parts.includes('thread') ? 0 : undefined, checkpoints);
      })()
    : undefined;
  const db = file?.db ?? openSqlite(path, LEDGER_MIGRATIONS, 'ledger');
  applySetting(db, setting);
  const ledger = new Ledger(new SqliteLedgerStore(db, undefined, file === undefined ? undefined : () => file.afterCommit()), {
    profile,
    genesis: keys.genesis,
    blockIntervalMs: 100,
    finalityDepth: 0,
    clock: systemClock,
    autoProduce: false,
  });
  const expiryMs = BigInt(Date.now() + 50 * 60_000);
  const regs = Array.from({ length: warmup + count }, () => {
    const key = fastKeyPair(randomBytes(32));
    const did = generateDid(profile);
    const docBlob = encodeDocument(parseDidDocument(didDocumentFor(did, key.publicKey), did));
    const msg = registrationSigningBytes(profile, { did, rootPubkey: key.publicKey, alias: null, documentHash: blake2_256(docBlob), expiryMs });
    const call: Call = { name: 'register_with_proof_v2', args: { did, alias: null, rootPubkey: key.publicKey, expiryMs, docBlob, signature: key.sign(msg) } };
    return { call, meta: { subject: did, action: 'register_did', limitKey: `${did}|registration` } };
  });
  const cpu = (u: NodeJS.CpuUsage) => u.user + u.system;
  let admit = 0;
  let block = 0;
  const main = { admit: 0, block: 0, admitReads: 0, blockReads: 0 };
  const run = async (from: number, to: number) => {
    for (let b = from; b < to; b += perBlock) {
      const a0 = process.cpuUsage();
      const am0 = schedstat().run;
      const ar0 = mainReads();
      const blockRegs = regs.slice(b, Math.min(to, b + perBlock));
      // `group` admissions in one event-loop turn, as concurrent requests arrive (one admission group, one commit)
      for (let g = 0; g < blockRegs.length; g += group) await Promise.all(blockRegs.slice(g, g + group).map((r) => ledger.admit(r.call, r.meta)));
      admit += cpu(process.cpuUsage(a0));
      main.admit += schedstat().run - am0;
      const br0 = mainReads();
      main.admitReads += br0 - ar0;
      const bm0 = schedstat().run;
      const b0 = process.cpuUsage();
      if (ledger.produceBlock() === null) throw new Error('no block');
      block += cpu(process.cpuUsage(b0));
      main.block += schedstat().run - bm0;
      main.blockReads += mainReads() - br0;
    }
  };
  await run(0, warmup);
  admit = block = 0;
  Object.assign(main, { admit: 0, block: 0, admitReads: 0, blockReads: 0 });
  const io0 = procIo();
  const r0 = process.resourceUsage();
  const t0 = process.cpuUsage();
  const m0 = cpuMs(process.pid, process.pid);
  const s0 = schedstat();
  const w0 = process.hrtime.bigint();
  await run(warmup, warmup + count);
  // the measured window on the monotonic clock (`perf record -k CLOCK_MONOTONIC`, then `perf report --time S,E`)
  process.stderr.write(`window ${Number(w0) / 1e9} ${Number(process.hrtime.bigint()) / 1e9}\n`);
  const total = cpu(process.cpuUsage(t0));
  const mainMs = cpuMs(process.pid, process.pid) - m0;
  const s1 = schedstat();
  const wallNs = Number(process.hrtime.bigint() - w0);
  const r1 = process.resourceUsage();
  const io1 = procIo();
  // what the window committed and the checkpointer has not copied yet, copied now: a longer pass interval leaves
  // more of the window's copies for after it
  const tail0 = process.cpuUsage();
  // (the thread's pass in progress makes it busy: that pass is part of the tail too)
  while (file?.checkpointerThread === true && (db.pragma('wal_checkpoint(PASSIVE)') as { busy: number }[])[0]?.busy === 1) {
    await new Promise((r) => setTimeout(r, 5));
  }
  const tailUs = cpu(process.cpuUsage(tail0));
  const r: Result = {
    checkpointer_thread: file?.checkpointerThread ?? false,
    wall_us: Math.round(wallNs / 1000 / count),
    blocked_us: Math.round((wallNs - (s1.run - s0.run) - (s1.wait - s0.wait)) / 1000 / count),
    main_us: Math.round((mainMs * 1000) / count),
    cpu_us: Math.round(total / count),
    tail_us: Math.round(tailUs / count),
    admit_us: Math.round(admit / count),
    block_us: Math.round(block / count),
    admit_main_us: Math.round(main.admit / 1000 / count),
    block_main_us: Math.round(main.block / 1000 / count),
    admit_main_reads: Math.round((main.admitReads / count) * 100) / 100,
    block_main_reads: Math.round((main.blockReads / count) * 100) / 100,
    reads: Math.round(((io1.syscr - io0.syscr) / count) * 10) / 10,
    read_kib: Math.round(((io1.rchar - io0.rchar) / 1024 / count) * 10) / 10,
    writes: Math.round(((io1.syscw - io0.syscw) / count) * 10) / 10,
    write_kib: Math.round(((io1.wchar - io0.wchar) / 1024 / count) * 10) / 10,
    faults: Math.round(((r1.minorPageFault - r0.minorPageFault + r1.majorPageFault - r0.majorPageFault) / count) * 10) / 10,
    rss_mib: Math.round(process.memoryUsage().rss / 2 ** 20),
    cache_kib: -Number(db.pragma('cache_size', { simple: true })),
    mmap_mib: Math.round(Number(db.pragma('mmap_size', { simple: true })) / 2 ** 20),
  };
  if (file !== undefined) await file.close();
  else db.close();
  console.log(JSON.stringify(r));
}

function side(root: string, dataDir: string, setting: string): Result {
  const self = fileURLToPath(import.meta.url);
  const args = ['--import', 'tsx', self, '--child', root, '--ledger', dataDir, '--setting', setting];
  for (const k of ['count', 'warmup', 'per-block', 'group'] as const) args.push(`--${k}`, values[k]!);
  const p = spawnSync(process.execPath, args, { encoding: 'utf8', cwd: root, maxBuffer: 1 << 24 });
  if (p.status !== 0) throw new Error(`child failed (${root}, ${dataDir}, ${setting}):\n${p.stderr}`);
  return JSON.parse(p.stdout.trim().split('\n').pop()!) as Result;
}

function main(): void {
  if (values.small === undefined || values.big === undefined) throw new Error('--small DIR and --big DIR (copies: registrations are added)');
  const here = resolve(fileURLToPath(import.meta.url), '../..');
  const trees = [{ name: 'this', root: here }, ...(values.other !== undefined ? [{ name: 'other', root: resolve(values.other) }] : [])];
  const settings = values.settings!.split(',');
  const ratios = new Map<string, number[]>();
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const setting of settings) {
      for (const tree of round % 2 === 1 ? trees : [...trees].reverse()) {
        // the small ledger stays small: each child adds its registrations to a fresh copy of it
        const copy = mkdtempSync(join(tmpdir(), 'ddn-reg-small-'));
        cpSync(values.small, copy, { recursive: true });
        const small = side(tree.root, copy, setting);
        rmSync(copy, { recursive: true, force: true });
        const bigDir = tree.name === 'other' && values['other-big'] !== undefined ? values['other-big'] : values.big;
        const bigCopy = values['fresh-big'] === true ? mkdtempSync(join(tmpdir(), 'ddn-reg-big-')) : undefined;
        if (bigCopy !== undefined) cpSync(bigDir, bigCopy, { recursive: true });
        const big = side(tree.root, bigCopy ?? bigDir, setting);
        if (bigCopy !== undefined) rmSync(bigCopy, { recursive: true, force: true });
        const key = `${tree.name} ${setting}`;
        const ratio = Math.round((big.main_us / small.main_us) * 100) / 100;
        ratios.set(key, [...(ratios.get(key) ?? []), ratio]);
        console.log(JSON.stringify({ round, tree: tree.name, setting, ratio, small, big, load: readFileSync('/proc/loadavg', 'utf8').split(' ')[0] }));
      }
    }
  }
  for (const [key, r] of ratios) {
    const sorted = [...r].sort((a, b) => a - b);
    console.log(`${key}: event-loop CPU per registration big ÷ small ${r.join(', ')} (median ${sorted[Math.floor(sorted.length / 2)]})`);
  }
}

if (values.child !== undefined) await child(values.child, values.ledger!, values.setting!);
else main();
