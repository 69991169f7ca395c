/** An admission batch's wait for company on a PostgreSQL ledger (`--ledger-admission-wait-ms`): the rule alone. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { batchWaitMs } from '../../src/store/postgres/admission-wait.js';

describe('batchWaitMs', () => {
  it('waits nothing without a wait set, or with nothing waiting', () => {
    assert.equal(batchWaitMs(0, 100, 1, 256, 100), 0);
    assert.equal(batchWaitMs(10, undefined, 0, 256, 100), 0);
  });
  it("counts the wait from the first admission's arrival, never below zero", () => {
    assert.equal(batchWaitMs(10, 100, 1, 256, 100), 10);
    assert.equal(batchWaitMs(10, 100, 3, 256, 104), 6);
    assert.equal(batchWaitMs(10, 100, 3, 256, 130), 0);
  });
  it('lets a full batch leave at once', () => {
    assert.equal(batchWaitMs(10, 100, 256, 256, 100), 0);
    assert.equal(batchWaitMs(10, 100, 300, 256, 100), 0);
  });
});
