/** The short-lived cache of a remote Directory's answers in a Relay or Cache process (src/adapters/directory-view-cache.ts). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/base/clock.js';
import { DdnError } from '../../src/base/errors.js';
import type { DeliveryView, DidView, DirectoryPort } from '../../src/ports/directory-port.js';
import { DirectoryViewCache } from '../../src/adapters/directory-view-cache.js';

function didView(did: string): DidView {
  return { did, deactivated: false, document: null, rootPubkey: new Uint8Array(32) };
}

/** A port that counts its calls; `answers` decides what each DID gets. */
function fakePort(answers: Map<string, 'ok' | 'missing' | 'fail'> = new Map()) {
  const calls: string[] = [];
  const answer = (did: string): DidView | null => {
    const a = answers.get(did) ?? 'ok';
    if (a === 'fail') throw new DdnError('policy_lookup_failed', 'down');
    return a === 'missing' ? null : didView(did);
  };
  const forgotten: string[] = [];
  /** The request id of each call, in call order. */
  const ids: (string | undefined)[] = [];
  const port: DirectoryPort & { forget(did: string, persona: string | null, tag: string | null): void } = {
    getDid: async (did, requestId) => {
      calls.push(`did ${did}`);
      ids.push(requestId);
      return answer(did);
    },
    lookupAlias: async (alias, requestId) => {
      calls.push(`alias ${alias}`);
      ids.push(requestId);
      return 'did:x:owner';
    },
    resolveDelivery: async (did, persona, tag, requestId) => {
      calls.push(`resolve ${did} ${persona} ${tag}`);
      ids.push(requestId);
      const recipient = answer(did);
      return recipient === null ? null : ({ recipient, persona, personaState: null, policy: null } as unknown as DeliveryView);
    },
    forget: (did) => void forgotten.push(did),
  };
  return { port, calls, forgotten, ids };
}

describe('DirectoryViewCache', () => {
  it('reuses an answer until the TTL has passed, then asks again', async () => {
    const clock = new ManualClock(1_000);
    const { port, calls } = fakePort();
    const cache = new DirectoryViewCache(port, clock, { ttlMs: 2_000 });
    await cache.getDid('did:x:a');
    clock.advance(1_999);
    await cache.getDid('did:x:a');
    assert.deepEqual(calls, ['did did:x:a']);
    clock.advance(1);
    await cache.getDid('did:x:a');
    assert.deepEqual(calls, ['did did:x:a', 'did did:x:a']);
  });

  it('keys resolutions by DID, persona and tag; aliases apart', async () => {
    const clock = new ManualClock(0);
    const { port, calls } = fakePort();
    const cache = new DirectoryViewCache(port, clock);
    await cache.resolveDelivery('did:x:a', null, null);
    await cache.resolveDelivery('did:x:a', 'brand', null);
    await cache.resolveDelivery('did:x:a', 'brand', 'vip');
    await cache.resolveDelivery('did:x:a', 'brand', 'vip');
    assert.equal(await cache.lookupAlias('alice'), 'did:x:owner');
    assert.equal(await cache.lookupAlias('alice'), 'did:x:owner');
    assert.deepEqual(calls, ['resolve did:x:a null null', 'resolve did:x:a brand null', 'resolve did:x:a brand vip', 'alias alice']);
  });

  it('shares one lookup between concurrent identical requests', async () => {
    const { port, calls } = fakePort();
    const cache = new DirectoryViewCache(port, new ManualClock(0));
    const views = await Promise.all([cache.getDid('did:x:a'), cache.getDid('did:x:a'), cache.getDid('did:x:a')]);
    assert.equal(calls.length, 1);
    assert.ok(views.every((v) => v?.did === 'did:x:a'));
  });

  it('never keeps a failure or a "no record" answer', async () => {
    const answers = new Map<string, 'ok' | 'missing' | 'fail'>([
      ['did:x:gone', 'missing'],
      ['did:x:down', 'fail'],
    ]);
    const { port, calls } = fakePort(answers);
    const cache = new DirectoryViewCache(port, new ManualClock(0));
    for (let i = 0; i < 2; i++) {
      assert.equal(await cache.getDid('did:x:gone'), null);
      await assert.rejects(cache.getDid('did:x:down'), (e: unknown) => e instanceof DdnError && e.code === 'policy_lookup_failed');
    }
    assert.deepEqual(calls, ['did did:x:gone', 'did did:x:down', 'did did:x:gone', 'did did:x:down']);
    assert.equal(cache.size, 0);
  });

  it('holds at most maxEntries answers, dropping the oldest', async () => {
    const { port, calls } = fakePort();
    const cache = new DirectoryViewCache(port, new ManualClock(0), { maxEntries: 2 });
    for (const d of ['did:x:a', 'did:x:b', 'did:x:c']) await cache.getDid(d);
    assert.equal(cache.size, 2);
    await cache.getDid('did:x:c');
    await cache.getDid('did:x:a');
    assert.deepEqual(calls, ['did did:x:a', 'did did:x:b', 'did did:x:c', 'did did:x:a']);
  });

  it('reuses a resolution whose policy rule won no longer than its policy_ttl_seconds', async () => {
    const clock = new ManualClock(0);
    const calls: string[] = [];
    const port: DirectoryPort = {
      getDid: async (did) => didView(did),
      lookupAlias: async () => null,
      resolveDelivery: async (did, persona, tag) => {
        calls.push(`${did} ${tag}`);
        const policy = tag === 'short' ? { policyTtlSeconds: 1 } : tag === 'long' ? { policyTtlSeconds: 300 } : null;
        return { recipient: didView(did), persona, personaState: null, policy } as unknown as DeliveryView;
      },
    };
    const cache = new DirectoryViewCache(port, clock, { ttlMs: 2_000 });
    for (const tag of ['short', 'long', null]) await cache.resolveDelivery('did:x:a', null, tag);
    clock.advance(999);
    for (const tag of ['short', 'long', null]) await cache.resolveDelivery('did:x:a', null, tag);
    assert.deepEqual(calls, ['did:x:a short', 'did:x:a long', 'did:x:a null'], 'all three reused within a second');
    clock.advance(1);
    for (const tag of ['short', 'long', null]) await cache.resolveDelivery('did:x:a', null, tag);
    assert.deepEqual(calls.slice(3), ['did:x:a short'], 'a policy_ttl_seconds of 1 ends reuse after 1 s');
    clock.advance(1_000);
    for (const tag of ['long', null]) await cache.resolveDelivery('did:x:a', null, tag);
    assert.deepEqual(calls.slice(4), ['did:x:a long', 'did:x:a null'], "a longer policy TTL never extends the cache's own");
  });

  it('forget drops the resolution here and in the wrapped port', async () => {
    const { port, calls, forgotten } = fakePort();
    const cache = new DirectoryViewCache(port, new ManualClock(0));
    await cache.resolveDelivery('did:x:a', null, 'vip');
    cache.forget('did:x:a', null, 'vip');
    await cache.resolveDelivery('did:x:a', null, 'vip');
    assert.equal(calls.length, 2);
    assert.deepEqual(forgotten, ['did:x:a']);
  });

  it("asks with the asker's request id on a miss; concurrent askers share the first one's lookup and id", async () => {
    const clock = new ManualClock(0);
    const { port, calls, ids } = fakePort();
    const cache = new DirectoryViewCache(port, clock, { ttlMs: 1_000 });
    await Promise.all([cache.getDid('did:x:a', 'first'), cache.getDid('did:x:a', 'second')]);
    await cache.lookupAlias('name', 'alias-req');
    await cache.resolveDelivery('did:x:a', null, 'invoice', 'resolve-req');
    await cache.resolveDelivery('did:x:a', null, 'invoice', 'reused');
    await cache.getDid('did:x:b');
    assert.deepEqual(calls, ['did did:x:a', 'alias name', 'resolve did:x:a null invoice', 'did did:x:b']);
    assert.deepEqual(ids, ['first', 'alias-req', 'resolve-req', undefined]);
  });
});
