/**
 * The rendered-resolve cache (src/directory/resolve-cache.ts): a block drops only the answers that read a key it
 * wrote. Over a real SQLite ledger and real signed changes: after each kind of change the cached answer equals a
 * fresh render, and the answers of DIDs the block did not touch survive it (proved by counting renders).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { to0x } from '../../src/base/bytes.js';
import { DdnError } from '../../src/base/errors.js';
import type { BlockRef, PoolEntry } from '../../src/ledger/types.js';
import { BlockTouches } from '../../src/ledger/block-touches.js';
import { defaultResolveCacheBytes, MIN_DEFAULT_RESOLVE_CACHE_BYTES, ResolveCache } from '../../src/directory/resolve-cache.js';
import { MissFilter } from '../../src/directory/resolve-admission.js';
import { VerifiedSignatures } from '../../src/ledger/runtime/verified-signatures.js';
import type { StateReader } from '../../src/ledger/state.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { keyOf, mutate, registerDid, registerFixture, type Fixture } from '../support/directory-flows.js';

function pendingFor(subject: string): PoolEntry {
  return {
    tx: { txHash: '0x01', extrinsic: 'x', status: 'pending', submittedAtMs: 0, meta: { subject, action: 'x', limitKey: subject } },
    call: { name: 'x' } as unknown as PoolEntry['call'],
    bytes: new Uint8Array(),
    verified: new VerifiedSignatures(),
  };
}

/** A ledger of one key per DID (`did/<did>` → its version), blocks changing what a test says. */
function fakeSetup(maxBytes?: number) {
  const state = new Map<string, number>();
  const touches = new BlockTouches();
  const ledger = {
    block: { number: 1, hash: '0x01', timestampMs: 1 } as BlockRef,
    pool: [] as PoolEntry[],
    known: true,
  };
  const renders: string[] = [];
  const cache = new ResolveCache(
    {
      finalizedRefNow: () => ledger.block,
      hasPendingFor: (did) => ledger.pool.some((e) => e.tx.meta.subject === did),
      finalizedView: (): StateReader => ({ get: (k) => state.get(k) }),
      touchedKeys: (a, b) => (ledger.known ? touches.between(a, b) : undefined),
    },
    (did, view) => {
      renders.push(did);
      const version = view.get(`did/${did}`);
      if (version === undefined) throw new DdnError('did_not_found', 'DID not found', { did });
      return { did, version };
    },
    maxBytes,
  );
  /** A finalized block writing `keys`. */
  const block = (writes: Record<string, number>) => {
    const n = ledger.block.number + 1;
    for (const [k, v] of Object.entries(writes)) state.set(k, v);
    touches.record(n, Object.keys(writes));
    ledger.block = { number: n, hash: `0x${n.toString(16).padStart(2, '0')}`, timestampMs: n };
  };
  return { ledger, renders, cache, state, block };
}

const parse = (b: string) => JSON.parse(b) as Record<string, unknown>;

describe('ResolveCache', () => {
  it('renders a DID once, and answers with the current block on every answer', () => {
    const { cache, renders, state, block } = fakeSetup();
    state.set('did/did:x:a', 1);
    assert.deepEqual(parse(cache.body('did:x:a')), { did: 'did:x:a', version: 1, block_number: 1, block_hash: '0x01' });
    block({ 'did/did:x:other': 1 });
    assert.deepEqual(parse(cache.body('did:x:a')), { did: 'did:x:a', version: 1, block_number: 2, block_hash: '0x02' });
    assert.deepEqual(renders, ['did:x:a']);
  });

  it('answers a cached body with the current block, never one an earlier answer carried', () => {
    const { cache, renders, state, block } = fakeSetup();
    state.set('did/did:x:a', 1);
    const answer = (n: number) => ({ did: 'did:x:a', version: 1, block_number: n, block_hash: `0x0${n}` });
    assert.deepEqual(parse(cache.body('did:x:a')), answer(1));
    const first = cache.body('did:x:a');
    assert.deepEqual(parse(first), answer(1));
    for (let n = 2; n <= 4; n++) {
      block({ 'did/did:x:other': n });
      for (let i = 0; i < 2; i++) assert.deepEqual(parse(cache.body('did:x:a')), answer(n));
    }
    assert.deepEqual(parse(first), answer(1), 'an answer handed out is not written over by later ones');
    assert.deepEqual(renders, ['did:x:a']);
  });

  it('a block drops the answers that read a key it wrote, and only those', () => {
    const { cache, renders, state, block } = fakeSetup();
    state.set('did/did:x:a', 1);
    state.set('did/did:x:b', 1);
    cache.body('did:x:a');
    cache.body('did:x:b');
    block({ 'did/did:x:a': 2 });
    block({ 'alias/unrelated': 1 });
    assert.equal(parse(cache.body('did:x:a')).version, 2);
    assert.equal(parse(cache.body('did:x:b')).version, 1);
    assert.deepEqual(renders, ['did:x:a', 'did:x:b', 'did:x:a']);
  });

  it("indexes only the keys an answer read besides its DID's own, and drops it for either", () => {
    const state = new Map<string, number>([
      ['did/did:x:a', 1],
      ['nonce/document_nonce/did:x:a', 1],
      ['alias/a', 1],
    ]);
    const touches = new BlockTouches();
    let block: BlockRef = { number: 1, hash: '0x01', timestampMs: 1 };
    const renders: string[] = [];
    const cache = new ResolveCache(
      {
        finalizedRefNow: () => block,
        hasPendingFor: () => false,
        finalizedView: (): StateReader => ({ get: (k) => state.get(k) }),
        touchedKeys: (a, b) => touches.between(a, b),
      },
      (did, view) => {
        renders.push(did);
        const own = (view.get(`did/${did}`) as number) + (view.get(`nonce/document_nonce/${did}`) as number);
        return did === 'did:x:a' ? { did, own, alias: view.get('alias/a') } : { did, own };
      },
      1 << 20,
    );
    const write = (key: string) => {
      state.set(key, (state.get(key) ?? 0) + 1);
      touches.record(block.number + 1, [key]);
      block = { number: block.number + 1, hash: `0x0${block.number + 1}`, timestampMs: 1 };
    };
    state.set('did/did:x:b', 1);
    state.set('nonce/document_nonce/did:x:b', 1);
    cache.body('did:x:b');
    assert.equal(cache.size, 1);
    for (const key of ['nonce/document_nonce/did:x:a', 'did/did:x:a', 'alias/a']) {
      cache.body('did:x:a');
      cache.body('did:x:b');
      renders.length = 0;
      write(key);
      assert.equal(parse(cache.body('did:x:a')).block_number, block.number);
      cache.body('did:x:b');
      assert.deepEqual(renders, ['did:x:a'], `a block writing ${key} drops a's answer and not b's`);
    }
  });

  it('drops everything when the ledger cannot tell what the blocks wrote', () => {
    const { cache, renders, state, block, ledger } = fakeSetup();
    state.set('did/did:x:a', 1);
    cache.body('did:x:a');
    ledger.known = false;
    block({});
    cache.body('did:x:a');
    assert.deepEqual(renders, ['did:x:a', 'did:x:a']);
  });

  it('never serves a cached body while the DID has pending operations; the same block without them does', () => {
    const { cache, renders, state, ledger } = fakeSetup();
    state.set('did/did:x:a', 1);
    cache.body('did:x:a');
    ledger.pool = [pendingFor('did:x:a')];
    cache.body('did:x:a');
    cache.body('did:x:a');
    ledger.pool = [pendingFor('did:x:other')];
    cache.body('did:x:a');
    cache.body('did:x:a');
    assert.deepEqual(renders, ['did:x:a', 'did:x:a', 'did:x:a']);
  });

  it('does not cache failures', () => {
    const { cache, renders } = fakeSetup();
    for (let i = 0; i < 2; i++)
      assert.throws(
        () => cache.body('did:x:missing'),
        (e: unknown) => e instanceof DdnError && e.code === 'did_not_found',
      );
    assert.deepEqual(renders, ['did:x:missing', 'did:x:missing']);
  });

  /** 60 DIDs of one length; with a budget of 5,000 bytes the cache holds three segments of 1 KiB (5 answers each). */
  const sixty = Array.from({ length: 60 }, (_, i) => `did:x:${String(i).padStart(2, '0')}`);

  it('holds what fits in its byte budget, the oldest unread answers out first; 0 keeps nothing', () => {
    const { cache, renders, state } = fakeSetup(5000);
    for (const d of sixty) state.set(`did/${d}`, 1);
    for (const d of sixty) cache.body(d);
    assert.ok(cache.bytes <= 5000, `${cache.bytes} bytes held`);
    const full = cache.size;
    assert.equal(full, 15);
    // 59 missed once while the budget was full (above): its next miss admits it, displacing the oldest segment's
    // answers (00–04: none read since); the others stay
    renders.length = 0;
    cache.body(sixty[59]!);
    cache.body(sixty[59]!);
    cache.body(sixty[0]!);
    cache.body(sixty[full - 1]!);
    cache.body(sixty[5]!);
    assert.deepEqual(renders, [sixty[59], sixty[0]]);

    const off = fakeSetup(0);
    off.state.set('did/did:x:a', 1);
    off.cache.body('did:x:a');
    off.cache.body('did:x:a');
    assert.deepEqual(off.renders, ['did:x:a', 'did:x:a']);
  });

  it('once its budget is full, admits a DID on its second miss, not its first, and answers right either way', () => {
    const { cache, renders, state, block } = fakeSetup(5000);
    for (const [i, d] of sixty.entries()) state.set(`did/${d}`, i % 10);
    for (const d of sixty) cache.body(d);
    const full = cache.size;
    assert.equal(full, 15);
    const outside = sixty.filter((d) => {
      const before = renders.length;
      cache.body(d);
      return renders.length > before;
    });
    // the first DIDs filled the budget and stayed (a plain FIFO or LRU would hold the last ones, and a second pass
    // in the same order would miss every DID); the others were rendered again, and that second miss admitted them
    assert.deepEqual(outside, sixty.slice(full));
    renders.length = 0;
    const last = outside[outside.length - 1]!;
    block({ 'alias/unrelated': 1 });
    assert.deepEqual(parse(cache.body(last)), { did: last, version: 9, block_number: 2, block_hash: '0x02' });
    assert.deepEqual(renders, []);
    assert.ok(cache.size <= full);
    assert.ok(cache.bytes <= 5000);
  });

  it("answers a DID read again from its text while the block stands, never another DID's after its record went", () => {
    const { cache, renders, state } = fakeSetup(5000);
    for (const [i, d] of sixty.entries()) state.set(`did/${d}`, i);
    for (const d of sixty) cache.body(d);
    // 04's answer made as text (a hit), then its record evicted while the same block stands and its id reused
    for (let i = 0; i < 2; i++) assert.equal(parse(cache.body(sixty[4]!)).did, sixty[4]);
    renders.length = 0;
    for (const d of sixty.slice(15)) {
      assert.equal(parse(cache.body(d)).did, d);
      assert.equal(parse(cache.body(d)).did, d, `${d} answered again (a hit)`);
    }
    assert.ok(renders.length >= 45);
  });
});

describe('defaultResolveCacheBytes', () => {
  const MIB = 1024 * 1024;
  const GIB = 1024 * MIB;
  it('is an eighth of the memory, in whole MiB, at least 16 MiB, whatever the heap limit (the answers are off it)', () => {
    assert.equal(defaultResolveCacheBytes(24 * GIB), 3 * GIB, 'this machine: holds a million answers');
    assert.equal(defaultResolveCacheBytes(2 * GIB), 256 * MIB);
    assert.equal(defaultResolveCacheBytes(1000 * MIB), 125 * MIB);
    assert.equal(defaultResolveCacheBytes(1001 * MIB), 125 * MIB, 'whole MiB');
    assert.equal(defaultResolveCacheBytes(64 * MIB), MIN_DEFAULT_RESOLVE_CACHE_BYTES);
  });
});

describe('MissFilter', () => {
  it('says a key was seen on its second look, then forgets it; a key that takes its slot replaces it', () => {
    const f = new MissFilter(1024);
    assert.equal(f.seenBefore('did:x:a'), false);
    assert.equal(f.seenBefore('did:x:a'), true);
    assert.equal(f.seenBefore('did:x:a'), false);
    // 2,000 other keys into 1,024 slots: some take a's slot (never all of them find theirs again)
    const keys = Array.from({ length: 2000 }, (_, i) => `did:x:${i}`);
    for (const k of keys) f.seenBefore(k);
    const again = keys.filter((k) => f.seenBefore(k)).length;
    assert.ok(again > 0 && again < keys.length, `${again} of ${keys.length}`);
  });
});

describe('BlockTouches', () => {
  it('answers the keys of a run of blocks, and undefined when one of them is not known', () => {
    const t = new BlockTouches(5);
    t.record(3, ['a', 'b']);
    t.record(4, ['b', 'c']);
    assert.deepEqual([...t.between(2, 4)!].sort(), ['a', 'b', 'c']);
    assert.equal(t.between(1, 4), undefined);
    assert.deepEqual([...t.between(4, 4)!], []);
    t.record(5, ['d', 'e', 'f']);
    // over 5 keys: block 3 is forgotten
    assert.equal(t.between(2, 5), undefined);
    assert.deepEqual([...t.between(3, 5)!].sort(), ['b', 'c', 'd', 'e', 'f']);
  });

  it('forgets the oldest blocks beyond its block bound, also when they wrote nothing', () => {
    const t = new BlockTouches(5, 3);
    for (let n = 1; n <= 4; n++) t.record(n, []);
    // four empty blocks, three remembered: block 1 is forgotten
    assert.equal(t.between(0, 4), undefined);
    assert.deepEqual([...t.between(1, 4)!], []);
    t.record(5, ['a']);
    assert.equal(t.between(1, 5), undefined);
    assert.deepEqual([...t.between(2, 5)!], ['a']);
  });
});

describe('ResolveCache over a real ledger', () => {
  let h: DirectoryHarness;
  let cache: ResolveCache;
  let a: Fixture;
  let b: Fixture;

  before(async () => {
    h = await startDirectory();
    cache = new ResolveCache(h.ledger, (did, view) => h.service.resolvePart(did, view));
    a = await registerFixture(h, 41);
    b = await registerFixture(h, 42);
  });
  after(() => h.close());

  /** Both DIDs answered (cached), a change to `a` made, then: `a` fresh, `b` not rendered again. */
  async function changeA(change: () => Promise<unknown>): Promise<void> {
    for (const f of [a, b]) assertFresh(f.did);
    const renders = cache.renders;
    await change();
    assertFresh(a.did);
    assert.equal(cache.renders, renders + 1, 'only the changed DID is rendered again');
    assertFresh(b.did);
    assert.equal(cache.renders, renders + 1, "the untouched DID's answer survived the block");
  }

  function assertFresh(did: string): void {
    let fresh: string;
    try {
      fresh = JSON.stringify(h.service.resolve(did));
    } catch (e) {
      assert.throws(
        () => cache.body(did),
        (got: unknown) => got instanceof DdnError && e instanceof DdnError && got.code === e.code,
      );
      return;
    }
    assert.equal(cache.body(did), fresh);
  }

  it('an alias added, renamed or removed', async () => {
    await changeA(() => mutate(h, a.did, a.key, 'add_alias', { alias: 'rc41b' }));
    await changeA(() => mutate(h, a.did, a.key, 'update_alias', { old_alias: 'rc41b', new_alias: 'rc41c' }));
    await changeA(() => mutate(h, a.did, a.key, 'remove_alias', { alias: 'rc41c' }));
  });

  it('a device added or tombstoned', async () => {
    await changeA(() => mutate(h, a.did, a.key, 'add_device', { device_id: 'dev-2' }));
    await changeA(() => mutate(h, a.did, a.key, 'tombstone_device', { device_id: 'dev-2' }));
  });

  it('the document changed (its document nonce with it)', async () => {
    await changeA(() =>
      mutate(h, a.did, a.key, 'AddService', {
        service: {
          id: `${a.did}#svc-2`,
          type: 'PlatformRelayService',
          serviceEndpoint: ['https://relay.example/2'],
          authorization: [`${a.did}#key-1`],
          priority: 2,
        },
      }),
    );
  });

  it('a pending change shows at once, and the block that includes it too', async () => {
    for (const f of [a, b]) assertFresh(f.did);
    const renders = cache.renders;
    await mutate(h, a.did, a.key, 'RemoveService', { id: `${a.did}#svc-2` }, { pending: true });
    const pending = JSON.parse(cache.body(a.did)) as { pending_operations: unknown[] };
    assert.equal(pending.pending_operations.length, 1);
    assertFresh(b.did);
    assert.equal(cache.renders, renders + 1);
    h.settle();
    assertFresh(a.did);
    assertFresh(b.did);
    assert.equal(cache.renders, renders + 2);
  });

  it('a new registration leaves every cached answer', async () => {
    for (const f of [a, b]) assertFresh(f.did);
    const renders = cache.renders;
    await registerDid(h, 43);
    assertFresh(a.did);
    assertFresh(b.did);
    assert.equal(cache.renders, renders);
  });

  it('the root key rotated', async () => {
    const next = keyOf(141);
    await changeA(() => mutate(h, a.did, a.key, 'UpdateRootPubkey', { new_root_pubkey: to0x(next.publicKey) }));
    a = { ...a, key: next };
  });

  it('the DID deactivated, then deleted', async () => {
    await changeA(() => mutate(h, a.did, a.key, 'deactivate_did'));
    for (const f of [a, b]) assertFresh(f.did);
    const renders = cache.renders;
    await mutate(h, b.did, b.key, 'delete_did');
    assert.throws(
      () => cache.body(b.did),
      (e: unknown) => e instanceof DdnError && e.code === 'did_not_found',
    );
    assertFresh(a.did);
    assert.equal(cache.renders, renders + 1);
  });
});
