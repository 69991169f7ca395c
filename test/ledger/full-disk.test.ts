/**
 * Block production on a full disk: a block that cannot be stored is tried again one block interval later (not in a
 * tight loop), the pool keeps what it accepted, and production resumes once the store takes writes again; a
 * submission that cannot be stored is 507, and the pool does not keep it.
 */
import { describe, it, mock } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import { ManualClock } from '../../src/base/clock.js';
import { Ledger } from '../../src/ledger/chain.js';
import type { LedgerStore } from '../../src/ledger/store.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { openSqlite } from '../../src/store/sqlite/database.js';
import { LEDGER_MIGRATIONS, SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';
import { StorageGuard } from '../../src/store/storage-guard.js';
import { didOf, genesisConfig, metaOf, registerCall, seedKey, T0 } from './harness.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const diskFull = () => Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });

/** `inner` whose listed methods fail with SQLITE_FULL while `state.full`, counting their calls. */
function failingStore(inner: SqliteLedgerStore, state: { full: boolean; calls: number }, methods: (keyof LedgerStore)[]): LedgerStore {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const fn = value as (...a: unknown[]) => unknown;
      if (!methods.includes(prop as keyof LedgerStore)) return fn.bind(target);
      return (...args: unknown[]) => {
        state.calls++;
        if (state.full) throw diskFull();
        return fn.apply(target, args);
      };
    },
  });
}

describe('the ledger on a full disk', () => {
  it('retries a block it could not store one interval later, keeps the pool, and resumes when space returns', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const db = openSqlite(':memory:', LEDGER_MIGRATIONS, 'ledger');
    try {
      const clock = new ManualClock(T0 + 1_000);
      const state = { full: true, calls: 0 };
      const errors: unknown[] = [];
      const ledger = new Ledger(failingStore(new SqliteLedgerStore(db), state, ['commitBlock']), {
        profile: makeProfile('platform'),
        genesis: genesisConfig(),
        blockIntervalMs: 1_000,
        finalityDepth: 0,
        clock,
        autoProduce: true,
        onError: (e) => errors.push(e),
      });
      const call = registerCall(didOf(51), seedKey(51));
      const { txHash } = ledger.submit(call, metaOf(call));
      mock.timers.tick(0);
      assert.equal(state.calls, 1, 'the first block was tried');
      assert.equal(errors.length, 1);
      mock.timers.tick(0);
      mock.timers.tick(999);
      assert.equal(state.calls, 1, 'not tried again within the interval');
      state.full = false;
      clock.advance(1_000);
      mock.timers.tick(1);
      assert.equal(state.calls, 2);
      assert.equal(ledger.headRef().number, 1);
      assert.equal(ledger.txView(txHash)?.status, 'finalized');
      ledger.stop();
    } finally {
      mock.timers.reset();
      db.close();
    }
  });

  it('answers a submission it cannot store with 507 insufficient_storage and keeps it out of the pool', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ddn-ledger-full-'));
    const db = openSqlite(':memory:', LEDGER_MIGRATIONS, 'ledger');
    // a disk with plenty of room, so the failure does not make the node degraded
    const guard = StorageGuard.open(dir, { reserveBytes: 0, checkIntervalMs: 0, freeSpace: () => 1 << 30 });
    try {
      const ledger = new Ledger(new SqliteLedgerStore(db, guard), {
        profile: makeProfile('platform'),
        genesis: genesisConfig(),
        blockIntervalMs: 1_000,
        finalityDepth: 0,
        clock: new ManualClock(T0 + 1_000),
        autoProduce: false,
      });
      // the database may not grow: SQLite itself answers SQLITE_FULL
      const pages = db.pragma('page_count', { simple: true }) as number;
      db.pragma(`max_page_count = ${pages}`);
      // registrations until one no longer fits
      let failed: ReturnType<typeof registerCall> | undefined;
      let error: unknown;
      for (let seed = 60; seed < 260 && failed === undefined; seed++) {
        const call = registerCall(didOf(seed), seedKey(seed));
        try {
          ledger.submit(call, metaOf(call));
        } catch (e) {
          [failed, error] = [call, e];
        }
      }
      assert.ok(failed !== undefined, 'a submission failed');
      assert.ok(error instanceof DdnError && error.code === 'insufficient_storage', String(error));
      assert.equal(ledger.isPending(failed), false);
      db.pragma(`max_page_count = ${pages * 100}`);
      assert.equal(ledger.submit(failed, metaOf(failed)).duplicate, false);
      assert.equal(ledger.isPending(failed), true);
    } finally {
      guard.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('starts on a full disk even when a pooled transaction that no longer passes cannot be marked dropped', () => {
    const db = openSqlite(':memory:', LEDGER_MIGRATIONS, 'ledger');
    try {
      const options = (clock: ManualClock) => ({
        profile: makeProfile('platform'),
        genesis: genesisConfig(),
        blockIntervalMs: 1_000,
        finalityDepth: 0,
        clock,
        autoProduce: false,
      });
      const first = new Ledger(new SqliteLedgerStore(db), options(new ManualClock(T0 + 1_000)));
      const call = registerCall(didOf(53), seedKey(53)); // valid until T0 + 300 s
      first.submit(call, metaOf(call));
      first.stop();
      // a restart after its expiry, on a disk that takes no write
      const state = { full: true, calls: 0 };
      const errors: unknown[] = [];
      const restarted = new Ledger(failingStore(new SqliteLedgerStore(db), state, ['markDropped']), {
        ...options(new ManualClock(T0 + 400_000)),
        onError: (e) => errors.push(e),
      });
      assert.equal(state.calls, 1);
      assert.equal(errors.length, 1);
      assert.equal(restarted.isPending(call), false);
      restarted.stop();
    } finally {
      db.close();
    }
  });
});
