/**
 * Single-thread reference rates, run in a fresh child process (`node --import tsx bench/references/micro.ts
 * <which> <seconds> <dir>`), printing one JSON line: raw better-sqlite3 single-row commits in WAL mode, and
 * Ed25519 verifications — node:crypto's (the targets' reference) and libsodium's (what the service verifies
 * with, for information), each for the whole time given.
 */
import { generateKeyPairSync, randomUUID, sign, verify } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sodium } from '../../src/crypto/ed25519-sodium.js';

/** Calls `op` in a loop for `seconds` (after a quarter of that as warm-up); operations per second. */
function rate(seconds: number, op: () => void): { per_s: number; n: number } {
  const until = (ms: number) => {
    const end = performance.now() + ms;
    let n = 0;
    let t = performance.now();
    while (t < end) {
      for (let i = 0; i < 64; i++) op();
      n += 64;
      t = performance.now();
    }
    return n;
  };
  until((seconds * 1000) / 4);
  const t0 = performance.now();
  const n = until(seconds * 1000);
  return { per_s: Math.round(n / ((performance.now() - t0) / 1000)), n };
}

function sqliteCommits(seconds: number, dir: string, synchronous: 'FULL' | 'NORMAL') {
  const path = join(dir, `ref-${synchronous.toLowerCase()}.sqlite`);
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL, v BLOB NOT NULL)');
  const insert = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
  const blob = Buffer.alloc(1024, 7);
  // autocommit: every INSERT is its own transaction and (FULL) its own WAL fsync
  const r = rate(seconds, () => insert.run(randomUUID(), blob));
  db.close();
  for (const f of [path, `${path}-wal`, `${path}-shm`]) rmSync(f, { force: true });
  return { ...r, synchronous, row_bytes: 1024 };
}

function ed25519Verifications(seconds: number) {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  // a message the size of a retrieval-proof text (~330 bytes)
  const msg = Buffer.from('x'.repeat(330));
  const sig = sign(null, msg, privateKey);
  const r = rate(seconds, () => {
    if (!verify(null, msg, publicKey, sig)) throw new Error('verify failed');
  });
  const lib = sodium;
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
  const libsodium =
    lib === null
      ? null
      : rate(seconds, () => {
          if (!lib.crypto_sign_verify_detached(sig, msg, raw)) throw new Error('libsodium verify failed');
        }).per_s;
  return { ...r, message_bytes: msg.length, key: 'parsed KeyObject', libsodium_per_s: libsodium };
}

const [which, secondsText, dir = '.'] = process.argv.slice(2);
const seconds = Number(secondsText ?? '2');
const out =
  which === 'sqlite'
    ? { full: sqliteCommits(seconds, dir, 'FULL'), normal: sqliteCommits(seconds, dir, 'NORMAL') }
    : which === 'ed25519'
      ? ed25519Verifications(seconds)
      : (() => {
          throw new Error(`unknown reference ${which}`);
        })();
process.stdout.write(`${JSON.stringify(out)}\n`);
