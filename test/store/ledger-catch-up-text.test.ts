/**
 * The text of a PostgreSQL catch-up (src/store/postgres/ledger-catch-up.ts): what each kind of catch-up asks the
 * database to parse, plan and run. No database needed.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { catchUpText } from '../../src/store/postgres/ledger-catch-up.js';

const statements = (text: string) => text.split(';').filter((s) => s.trim() !== '');

describe('ledger on PostgreSQL: the catch-up text', () => {
  it('reads blocks, their state writes and finished transactions, then the pending rows', () => {
    const s = statements(catchUpText(5, 7, 100));
    assert.equal(s.length, 4);
    assert.match(s[0]!, /FROM ledger_blocks WHERE number >= 5 AND number < 105/);
    assert.match(s[3]!, /FROM ledger_txs WHERE status = 'pending' AND seq > 7 ORDER BY seq/);
  });

  it('reads in a transaction of its own, one snapshot, when asked to (a catch-up outside any transaction)', () => {
    const s = statements(catchUpText(5, 7, 100, true));
    assert.equal(s.length, 6);
    assert.match(s[0]!, /^BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY$/);
    assert.match(s[1]!, /FROM ledger_blocks WHERE number >= 5 AND number < 105/);
    assert.match(s[4]!, /FROM ledger_txs WHERE status = 'pending' AND seq > 7 ORDER BY seq/);
    assert.equal(s[5]!.trim(), 'COMMIT');
  });

  it('reads only the pending rows when no block is asked for (a block producer’s catch-ups): one statement', () => {
    const s = statements(catchUpText(5, 7, 0));
    assert.equal(s.length, 1);
    assert.match(s[0]!, /FROM ledger_txs WHERE status = 'pending' AND seq > 7 ORDER BY seq/);
  });
});
