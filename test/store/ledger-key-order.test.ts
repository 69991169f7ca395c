/**
 * A block's state writes reach the SQLite ledger in key order (the order of ledger_current's key index), whatever
 * order the block made them in; what the ledger holds after the block is the same.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openSqlite } from '../../src/store/sqlite/database.js';
import { inKeyOrder, LEDGER_MIGRATIONS, SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';
import type { StateValue } from '../../src/ledger/state.js';

describe("a block's state writes in key order", () => {
  it('orders the writes by key (binary, as SQLite compares the keys), values with their keys', () => {
    const writes = new Map<string, number | undefined>([
      ['did/did:ddn:b', 1],
      ['deleted/did:ddn:z', undefined],
      ['did/did:ddn:B', 2],
      ['did/did:ddn:a', 3],
      ['alias/x', 4],
    ]);
    assert.deepEqual(inKeyOrder(writes), [
      ['alias/x', 4],
      ['deleted/did:ddn:z', undefined],
      ['did/did:ddn:B', 2],
      ['did/did:ddn:a', 3],
      ['did/did:ddn:b', 1],
    ]);
    assert.deepEqual([...writes.keys()][0], 'did/did:ddn:b', 'the block’s own map is not changed');
  });

  it("commits a block's writes made out of key order: each key holds its value, the replaced ones kept", () => {
    const db = openSqlite(':memory:', LEDGER_MIGRATIONS, 'ledger');
    const store = new SqliteLedgerStore(db);
    const block = (n: number) => ({
      header: { parentHash: new Uint8Array(32), number: n, timestampMs: n, extrinsicsRoot: new Uint8Array(32), resultsRoot: new Uint8Array(32) },
      hash: new Uint8Array(32).fill(n),
    });
    const v = (s: string): StateValue => ({ s });
    store.initGenesis(block(0));
    store.commitBlock(
      block(1),
      new Map([
        ['k/c', v('c1')],
        ['k/a', v('a1')],
        ['k/b', v('b1')],
      ]),
      [],
    );
    store.commitBlock(
      block(2),
      new Map<string, StateValue | undefined>([
        ['k/b', undefined],
        ['k/a', v('a2')],
        ['k/d', v('d2')],
      ]),
      [],
    );
    const at = (n: number) => ['k/a', 'k/b', 'k/c', 'k/d'].map((k) => store.readState(k, n));
    assert.deepEqual(at(2), [v('a2'), undefined, v('c1'), v('d2')]);
    assert.deepEqual(at(1), [v('a1'), v('b1'), v('c1'), undefined]);
    db.close();
  });
});
