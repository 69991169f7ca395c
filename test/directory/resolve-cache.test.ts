/** The rendered-resolve cache (src/directory/resolve-cache.ts): one render per DID and finalized block. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import type { BlockRef, PoolEntry } from '../../src/ledger/chain.js';
import { ResolveCache } from '../../src/directory/resolve-cache.js';
import { VerifiedSignatures } from '../../src/ledger/runtime/verified-signatures.js';

function pendingFor(subject: string): PoolEntry {
  return {
    tx: { txHash: '0x01', extrinsic: 'x', status: 'pending', submittedAtMs: 0, meta: { subject, action: 'x', limitKey: subject } },
    call: { name: 'x' } as unknown as PoolEntry['call'],
    bytes: new Uint8Array(),
    verified: new VerifiedSignatures(),
  };
}

function setup(maxEntries?: number) {
  const ledger = { block: { number: 1, hash: '0xaa', timestampMs: 1 } as BlockRef, pool: [] as PoolEntry[] };
  const renders: string[] = [];
  const cache = new ResolveCache(
    { finalizedRefNow: () => ledger.block, pendingEntries: () => ledger.pool },
    (did) => {
      renders.push(did);
      if (did === 'did:x:missing') throw new DdnError('did_not_found', 'DID not found', { did });
      return { did, block_number: ledger.block.number };
    },
    maxEntries,
  );
  return { ledger, renders, cache };
}

const parse = (b: string) => JSON.parse(b) as Record<string, unknown>;

describe('ResolveCache', () => {
  it('renders a DID once per finalized block', () => {
    const { cache, renders } = setup();
    assert.deepEqual(parse(cache.body('did:x:a')), { did: 'did:x:a', block_number: 1 });
    assert.deepEqual(parse(cache.body('did:x:a')), { did: 'did:x:a', block_number: 1 });
    assert.deepEqual(renders, ['did:x:a']);
  });

  it('renders again once the finalized block changes, and drops every other entry', () => {
    const { cache, renders, ledger } = setup();
    cache.body('did:x:a');
    cache.body('did:x:b');
    ledger.block = { number: 2, hash: '0xbb', timestampMs: 2 };
    assert.deepEqual(parse(cache.body('did:x:a')), { did: 'did:x:a', block_number: 2 });
    assert.equal(cache.size, 1);
    assert.deepEqual(renders, ['did:x:a', 'did:x:b', 'did:x:a']);
  });

  it('never serves a cached body while the DID has pending operations; the same block without them does', () => {
    const { cache, renders, ledger } = setup();
    cache.body('did:x:a');
    ledger.pool = [pendingFor('did:x:a')];
    cache.body('did:x:a');
    cache.body('did:x:a');
    ledger.pool = [pendingFor('did:x:other')];
    cache.body('did:x:a');
    cache.body('did:x:a');
    // no pending entries and the same finalized block: the body rendered first is the right one again
    assert.deepEqual(renders, ['did:x:a', 'did:x:a', 'did:x:a']);
  });

  it('does not cache failures', () => {
    const { cache, renders } = setup();
    for (let i = 0; i < 2; i++)
      assert.throws(
        () => cache.body('did:x:missing'),
        (e: unknown) => e instanceof DdnError && e.code === 'did_not_found',
      );
    assert.deepEqual(renders, ['did:x:missing', 'did:x:missing']);
  });

  it('holds at most maxEntries DIDs; the rest are rendered each time', () => {
    const { cache, renders } = setup(1);
    cache.body('did:x:a');
    cache.body('did:x:b');
    cache.body('did:x:b');
    cache.body('did:x:a');
    assert.equal(cache.size, 1);
    assert.deepEqual(renders, ['did:x:a', 'did:x:b', 'did:x:b']);
  });
});
