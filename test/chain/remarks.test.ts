import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { submitErrorOf } from '../../src/chain/chain-errors.js';
import { remarksOf, type ExtrinsicView } from '../../src/chain/remarks.js';

const ex = (section: string, method: string, signer: string | undefined, byte = 0): ExtrinsicView => ({
  section,
  method,
  signer,
  data: () => Uint8Array.of(byte),
});

describe('which extrinsics are ddn remarks', () => {
  it('keeps signed top-level remarks that dispatched, in block order, with their index', () => {
    const block = [
      ex('timestamp', 'set', undefined),
      ex('system', 'remarkWithEvent', '5A', 1),
      ex('system', 'remark', '5B', 2),
      ex('system', 'remarkWithEvent', '5C', 3), // failed: no ExtrinsicSuccess
      ex('balances', 'transfer', '5D'),
      ex('utility', 'batch', '5E'),
      ex('system', 'remark', undefined, 4), // unsigned
    ];
    const got = remarksOf(block, new Set([0, 1, 2, 4, 5, 6]));
    assert.deepEqual(
      got.map((r) => [r.index, r.signer, [...r.data]]),
      [
        [1, '5A', [1]],
        [2, '5B', [2]],
      ],
    );
  });
});

describe('what a refused submission means', () => {
  it('maps the node and chopsticks wordings to the error kinds', () => {
    assert.equal(submitErrorOf('1010: Invalid Transaction: Inability to pay some fees , e.g. account balance too low').kind, 'insufficient_funds');
    assert.equal(submitErrorOf('1010: {"invalid":{"payment":null}}').kind, 'insufficient_funds');
    assert.equal(submitErrorOf('1010: Invalid Transaction: Transaction would exhaust the block limits').kind, 'too_large');
    assert.equal(submitErrorOf('1010: {"invalid":{"exhaustsResources":null}}').kind, 'too_large');
    assert.equal(submitErrorOf('1010: Invalid Transaction: Transaction is outdated').kind, 'rejected');
    assert.equal(submitErrorOf('1014: Priority is too low').kind, 'rejected');
  });
});
