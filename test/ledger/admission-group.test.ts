/**
 * A ledger alone on its store stores one event-loop turn's admissions in one transaction (src/ledger/admission-group.ts),
 * answering each after the commit; and a new head's state keeps what the previous head read and what its block
 * wrote (the DID record a write reads is not read and decoded again after every block).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/base/clock.js';
import { DdnError } from '../../src/base/errors.js';
import { AdmissionGroup } from '../../src/ledger/admission-group.js';
import { Ledger } from '../../src/ledger/chain.js';
import { LedgerFailure } from '../../src/ledger/errors.js';
import { getDidRecord, keys } from '../../src/ledger/records.js';
import type { StateValue } from '../../src/ledger/state.js';
import type { TxRecord } from '../../src/ledger/store.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { openSqlite, type SqliteDb } from '../../src/store/sqlite/database.js';
import { LEDGER_MIGRATIONS, SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';
import { aliasCall, didOf, genesisConfig, metaOf, registerCall, rootSigner, seedKey, T0 } from './harness.js';

/** A SQLite ledger store that counts its pending-row transactions and state reads, and can fail its writes. */
class CountingStore extends SqliteLedgerStore {
  transactions = 0;
  rows = 0;
  failWrites = false;
  readonly reads: string[] = [];
  override putPendingTx(tx: TxRecord): void {
    this.putPendingTxs([tx]);
  }
  override putPendingTxs(txs: readonly TxRecord[]): void {
    if (this.failWrites) throw new DdnError('insufficient_storage', 'the write could not be persisted');
    this.transactions++;
    this.rows += txs.length;
    if (txs.length === 1) super.putPendingTx(txs[0]!);
    else super.putPendingTxs(txs);
  }
  override readState(key: string, atBlock: number): StateValue | undefined {
    this.reads.push(key);
    return super.readState(key, atBlock);
  }
}

function open(): { ledger: Ledger; store: CountingStore; db: SqliteDb; reopen(): Ledger; close(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-admission-group-'));
  const path = join(dir, 'ledger.sqlite');
  let db = openSqlite(path, LEDGER_MIGRATIONS, 'ledger');
  const clock = new ManualClock(T0 + 1_000);
  const make = (d: SqliteDb) => {
    const store = new CountingStore(d);
    const ledger = new Ledger(store, { profile: PLATFORM, genesis: genesisConfig(), blockIntervalMs: 1000, finalityDepth: 0, clock, autoProduce: false });
    return { ledger, store };
  };
  const first = make(db);
  const h = {
    ...first,
    db,
    reopen() {
      h.ledger.stop();
      db.close();
      db = openSqlite(path, LEDGER_MIGRATIONS, 'ledger');
      const next = make(db);
      h.ledger = next.ledger;
      h.store = next.store;
      return next.ledger;
    },
    close() {
      h.ledger.stop();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return h;
}

const key = (n: number) => seedKey(60 + n);
const dids = [1, 2, 3, 4].map((n) => didOf(70 + n));
const register = (i: number) => registerCall(dids[i]!, key(i));

test('admissions of one turn: one transaction stores every row, each answered after it; a duplicate in the turn is answered as one', async () => {
  const h = open();
  try {
    const calls = [0, 1, 2].map(register);
    const answers = [...calls, calls[1]!].map((c) => h.ledger.admit(c, metaOf(c)));
    // nothing is stored or pooled before the turn ends
    assert.equal(h.ledger.poolSize, 0);
    assert.equal(h.store.pendingTxs().length, 0);
    const results = await Promise.all(answers);
    assert.deepEqual(
      results.map((r) => r.duplicate),
      [false, false, false, true],
    );
    assert.equal(results[3]!.txHash, results[1]!.txHash);
    assert.equal(h.store.transactions, 1);
    assert.equal(h.store.rows, 3);
    assert.equal(h.ledger.poolSize, 3);
    // the rows are what a restart rebuilds the pool from
    const pooled = h.ledger.pendingEntries().map((e) => e.tx.txHash);
    assert.deepEqual(
      h
        .reopen()
        .pendingEntries()
        .map((e) => e.tx.txHash),
      pooled,
    );
  } finally {
    h.close();
  }
});

test('a group sees its earlier admissions: a refused one does not stop the others, and the next turn is a new transaction', async () => {
  const h = open();
  try {
    await h.ledger.admit(register(0), metaOf(register(0)));
    h.ledger.produceBlock();
    const ok = aliasCall(dids[0]!, { kind: 'add', alias: 'first' }, rootSigner(key(0)), { nonce: 0n });
    const sameNonce = aliasCall(dids[0]!, { kind: 'add', alias: 'second' }, rootSigner(key(0)), { nonce: 0n });
    const next = aliasCall(dids[0]!, { kind: 'add', alias: 'third' }, rootSigner(key(0)), { nonce: 1n });
    const before = h.store.transactions;
    const [a, b, c] = await Promise.allSettled([ok, sameNonce, next].map((call) => h.ledger.admit(call, metaOf(call))));
    assert.equal(a.status, 'fulfilled');
    assert.equal(b.status, 'rejected');
    assert.ok(
      b.status === 'rejected' && b.reason instanceof LedgerFailure && b.reason.errorName === 'InvalidAliasNonce',
      String(b.status === 'rejected' && b.reason),
    );
    assert.equal(c.status, 'fulfilled');
    assert.equal(h.store.transactions, before + 1);
    assert.equal(h.ledger.poolSize, 2);
    const later = register(1);
    await h.ledger.admit(later, metaOf(later));
    assert.equal(h.store.transactions, before + 2);
  } finally {
    h.close();
  }
});

test('a group whose rows cannot be stored fails every admission with the store’s error and leaves the pool as it was', async () => {
  const h = open();
  try {
    h.store.failWrites = true;
    const settled = await Promise.allSettled([0, 1].map((i) => h.ledger.admit(register(i), metaOf(register(i)))));
    for (const s of settled) {
      assert.ok(s.status === 'rejected' && s.reason instanceof DdnError && s.reason.code === 'insufficient_storage');
    }
    assert.equal(h.ledger.poolSize, 0);
    assert.equal(h.ledger.isPending(register(0)), false);
    h.store.failWrites = false;
    const r = await h.ledger.admit(register(0), metaOf(register(0)));
    assert.equal(r.duplicate, false);
    assert.equal(h.ledger.poolSize, 1);
  } finally {
    h.close();
  }
});

test('a new head keeps what the previous head read and what its block wrote: neither is read from the store again', async () => {
  const h = open();
  try {
    await Promise.all([0, 1].map((i) => h.ledger.admit(register(i), metaOf(register(i)))));
    h.ledger.produceBlock();
    const [a, b] = [dids[0]!, dids[1]!];
    assert.ok(getDidRecord(h.ledger.poolView(), a));
    assert.ok(getDidRecord(h.ledger.poolView(), b));
    const call = aliasCall(a, { kind: 'add', alias: 'carried' }, rootSigner(key(0)), { nonce: 0n });
    await h.ledger.admit(call, metaOf(call));
    h.ledger.produceBlock();
    h.store.reads.length = 0;
    // b's record: not written by the block, kept; a's: written by the block (its new version), carried from the block
    assert.equal(getDidRecord(h.ledger.poolView(), b)?.deactivated, false);
    const recA = getDidRecord(h.ledger.poolView(), a);
    assert.ok(recA && recA.version > 0 && recA.aliases?.includes('carried'));
    assert.equal(h.store.reads.length, 0, `read again: ${h.store.reads.join(', ')}`);
    assert.ok(!h.store.reads.includes(keys.did(a)));
    // the carried values are the store's: a restart reads the same (strictly equal, field by field)
    const again = h.reopen();
    assert.deepEqual(getDidRecord(again.poolView(), b), getDidRecord(again.finalizedView(), b));
    assert.deepEqual(getDidRecord(again.poolView(), a), recA);
  } finally {
    h.close();
  }
});

test('the queue of admissions waiting for their turn is bounded: beyond it, 503 ledger_unavailable, the Directory 503', async () => {
  const turns: (() => void)[] = [];
  const seen: number[] = [];
  const group = new AdmissionGroup(
    (g) => {
      seen.push(g.length);
      for (const q of g) q.resolve({ txHash: '0x00', duplicate: false });
    },
    (run) => turns.push(run),
    2,
  );
  const canon = { bytes: new Uint8Array(), call: register(0) };
  const waiting = [group.admit(canon, metaOf(register(0))), group.admit(canon, metaOf(register(0)))];
  await assert.rejects(group.admit(canon, metaOf(register(0))), (e: unknown) => e instanceof DdnError && e.code === 'ledger_unavailable');
  assert.equal(group.size, 2);
  assert.equal(turns.length, 1, 'one end of turn for the group');
  turns[0]!();
  await Promise.all(waiting);
  assert.deepEqual(seen, [2]);
  assert.equal(group.size, 0);
});
