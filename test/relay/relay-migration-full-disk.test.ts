/**
 * The Relay's migration 5 (it copies `relay_results` into a new table at the first start after an upgrade) on a
 * disk without room for the copy: nothing is half-copied or lost, `ddn serve` refuses to start with a message
 * naming the file (no stack), and the next start with room applies it with every row. The full disk is a page
 * limit (`PRAGMA max_page_count`) for the migration alone, and a file size limit (`ulimit -f`, which Node meets
 * as EFBIG, SQLite as an I/O error) for a real `ddn serve`.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { isStorageFailure } from '../../src/base/storage-errors.js';
import { migrate, openSqlite } from '../../src/store/sqlite/database.js';
import { RELAY_MIGRATIONS } from '../../src/store/sqlite/relay-schema.js';
import { ddnArgv } from '../support/ddn-command.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ROWS = 6000;
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A data directory whose relay.sqlite stopped at migration 4 holding {@link ROWS} remembered results (≈4 MB). */
function dataDirBeforeMigration5(): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-relay-m5-'));
  dirs.push(dir);
  const file = join(dir, 'relay.sqlite');
  const db = openSqlite(
    file,
    RELAY_MIGRATIONS.filter((m) => m.version <= 4),
    'relay',
  );
  const insert = db.prepare('INSERT INTO relay_results (message_key, content_hash, result, created_at_ms, recipient) VALUES (?, ?, ?, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < ROWS; i++) insert.run(`key-${i}`, `hash-${i}`, JSON.stringify({ i, detail: 'r'.repeat(500) }), 1_000 + i, `did:example:${i % 7}`);
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { dir, file };
}

/** The file's migration version, its results (in order) and whether a half-made copy is left. */
function contents(file: string) {
  const db = new Database(file, { readonly: true });
  try {
    const version = (db.prepare("SELECT max(version) AS v FROM schema_migrations WHERE namespace = 'relay'").get() as { v: number }).v;
    const keys = (db.prepare('SELECT message_key FROM relay_results ORDER BY created_at_ms').all() as { message_key: string }[]).map((r) => r.message_key);
    const copy = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'relay_results_v5'").get() as { n: number };
    return { version, keys, halfCopy: copy.n > 0 };
  } finally {
    db.close();
  }
}

const expectedKeys = Array.from({ length: ROWS }, (_, i) => `key-${i}`);

function serve(dir: string, fileSizeLimitKiB?: number) {
  const args = [...ddnArgv(), 'serve', '--data-dir', dir, '--directory-port', '0', '--relay-port', '0', '--cache-port', '0', '--storage-reserve-bytes', '0'];
  const quoted = [process.execPath, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const proc =
    fileSizeLimitKiB === undefined
      ? spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('bash', ['-c', `ulimit -f ${fileSizeLimitKiB} && exec ${quoted}`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8').on('data', (s: string) => {
    out += s;
    // listening: stop it
    if (out.includes('\n')) proc.kill('SIGTERM');
  });
  proc.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    proc.on('close', (code) => resolve({ code, stdout: out, stderr: err })),
  );
}

describe('the Relay migration 5 on a full disk', () => {
  it('rolls back whole when SQLite runs out of pages mid-copy, and applies with every row once there is room', () => {
    const { file } = dataDirBeforeMigration5();
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma(`max_page_count = ${Number(db.pragma('page_count', { simple: true })) + 50}`);
    assert.throws(() => migrate(db, RELAY_MIGRATIONS, 'relay'), isStorageFailure);
    db.close();
    assert.deepEqual(contents(file), { version: 4, keys: expectedKeys, halfCopy: false }, 'nothing half-copied, nothing lost');
    openSqlite(file, RELAY_MIGRATIONS, 'relay').close();
    assert.deepEqual(contents(file), { version: 5, keys: expectedKeys, halfCopy: false }, 'applied, every row carried');
  });

  it('makes `ddn serve` refuse to start with a message naming relay.sqlite, and start once there is room', async () => {
    const { dir, file } = dataDirBeforeMigration5();
    // room for the node's new small files, not for a copy of the results (the WAL would grow by ≈4 MB)
    const full = await serve(dir, 2048);
    assert.equal(full.code, 1, full.stderr);
    assert.match(
      full.stderr,
      /^ddn serve: .*relay\.sqlite could not be opened or migrated: its disk is full or failed a write \(SQLITE_[A-Z_]+\); nothing was changed/m,
    );
    assert.doesNotMatch(full.stderr, /^\s+at /m, 'no stack trace');
    assert.deepEqual(contents(file), { version: 4, keys: expectedKeys, halfCopy: false }, 'nothing half-copied, nothing lost');
    const roomy = await serve(dir);
    assert.match(roomy.stdout, /"event":"listening"/, roomy.stderr);
    assert.deepEqual(contents(file), { version: 5, keys: expectedKeys, halfCopy: false }, 'applied at the next start, every row carried');
  });
});
