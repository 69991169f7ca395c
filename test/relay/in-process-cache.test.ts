/**
 * The Relay's store at its own Cache in-process (http-api.md §10.4.1 step 2) against the same store over node-signed
 * HTTP: one Relay and one Cache (a real CacheService and mailbox), the Cache also served on a loopback port. A
 * recipient publishing the Relay's own Cache URL is stored at in-process (the Relay hands over its parse, its
 * sender check and its resolution); one publishing the loopback URL, over HTTP as on a split network. Each
 * behaviour is asserted to answer the same both ways: success, every refusal the Cache can make of an envelope the
 * Relay admitted, a full mailbox, a chunk set. The sender signature is verified once on the in-process path.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { toBase64 } from '../../src/base/bytes.js';
import { senderSigningBytes, verifySenderSignature, type SenderSignatureCheck } from '../../src/protocol/sender-signature.js';
import type { CacheSettings } from '../../src/cache/settings.js';
import { CACHE_URL, expectFailure, expectSuccess, isoSeconds, startRelay, type RelayHarness, type Reply } from './harness.js';
import type { Recipient } from '../cache/harness.js';

type Body = Record<string, unknown>;

/** A Relay whose Cache is reachable both ways, and a recipient of each way; `checks` counts sender-signature checks. */
interface Pair {
  h: RelayHarness;
  inProcess: Recipient;
  overHttp: Recipient;
  checks: { n: number };
}

async function pair(seed: number, cacheSettings: Partial<Omit<CacheSettings, 'profile' | 'publicCacheUrls'>> = {}): Promise<Pair> {
  const checks = { n: 0 };
  const counting: SenderSignatureCheck = (...args) => {
    checks.n++;
    verifySenderSignature(...args);
  };
  const h = await startRelay({ cacheOverHttp: true, cacheSettings, verifySender: counting });
  const inProcess = await h.registerRecipient(seed, { cacheEndpoints: [`${CACHE_URL}/`] });
  const overHttp = await h.registerRecipient(seed + 1, { cacheEndpoints: [h.cacheHttpUrl!] });
  return { h, inProcess, overHttp, checks };
}

/** `env` signed by `r` as its sender (§10.2). */
function signed(p: Pair, r: Recipient, env: Body): Body {
  return { ...env, sender: r.did, sender_key_id: 'root', sender_signature: toBase64(r.key.sign(senderSigningBytes(p.h.profile, env))) };
}

/** What must agree between the two ways: the answer, the Cache's URL aside, but for the attempts (HTTP retries, in-process does not). */
function comparable(res: Reply, endpoint: string): Body {
  const { retry_count: _r, ...rest } = JSON.parse(JSON.stringify(res.body).split(endpoint).join('<cache>')) as Body;
  void _r;
  return { status: res.status, ...rest };
}

describe('Relay → own Cache in-process answers as over HTTP', () => {
  let p: Pair;
  before(async () => {
    p = await pair(71);
  });
  after(async () => {
    await p.h.close();
  });

  const both = async (make: (r: Recipient) => Body) => ({
    local: await p.h.post(make(p.inProcess)),
    http: await p.h.post(make(p.overHttp)),
  });

  it('stores a sender-signed envelope both ways; the in-process store checks the signature once, HTTP twice', async () => {
    const before = p.checks.n;
    const local = await p.h.post(signed(p, p.inProcess, p.h.envelope(p.inProcess.did)));
    assert.equal(p.checks.n - before, 1, 'the Cache took the Relay’s check');
    const mid = p.checks.n;
    const http = await p.h.post(signed(p, p.overHttp, p.h.envelope(p.overHttp.did)));
    assert.equal(p.checks.n - mid, 2, 'over HTTP the Cache checks again');
    expectSuccess(local, 'cached', 'cache_fallback');
    expectSuccess(http, 'cached', 'cache_fallback');
    assert.deepEqual(comparable(local, CACHE_URL), comparable(http, p.h.cacheHttpUrl!));
    assert.equal(typeof (local.body.details as Body).expires_at, 'string', 'the retention the Cache applied');
    assert.match(String((local.body.details as Body).applied_ttl), /^PT23H59M\d+S$/, 'a day from the whole-second timestamp');
    assert.equal((await p.h.cached(p.inProcess.did)).length, 1);
    assert.equal((await p.h.cached(p.overHttp.did)).length, 1);
  });

  it('an unsigned envelope: no check either way', async () => {
    const before = p.checks.n;
    const { local, http } = await both((r) => p.h.envelope(r.did));
    assert.equal(p.checks.n, before);
    expectSuccess(local, 'cached', 'cache_fallback');
    assert.deepEqual(comparable(local, CACHE_URL), comparable(http, p.h.cacheHttpUrl!));
  });

  it('a chunk set is delivered whole both ways', async () => {
    const sets = { local: randomUUID(), http: randomUUID() };
    const chunk = (r: Recipient, group: string, seq: number) =>
      p.h.envelope(r.did, { message_group_id: group, sequence_number: seq, total_chunks: 3, message_id: randomUUID() });
    for (const seq of [0, 1]) {
      expectSuccess(await p.h.post(chunk(p.inProcess, sets.local, seq)), 'chunk_staged', 'staged');
      expectSuccess(await p.h.post(chunk(p.overHttp, sets.http, seq)), 'chunk_staged', 'staged');
    }
    const local = await p.h.post(chunk(p.inProcess, sets.local, 2));
    const http = await p.h.post(chunk(p.overHttp, sets.http, 2));
    expectSuccess(local, 'chunk_set_delivered', 'cache_fallback');
    const strip = (res: Reply, endpoint: string) => {
      const c = comparable(res, endpoint);
      delete (c.details as Body).message_group_id;
      return c;
    };
    assert.deepEqual(strip(local, CACHE_URL), strip(http, p.h.cacheHttpUrl!));
    const held = await p.h.mailbox.getChunkSet(p.inProcess.did, sets.local, p.h.clock.nowMs());
    assert.equal(held?.entries.length, 3);
  });
});

describe("Relay → own Cache in-process: the Cache's own settings and refusals, mapped as over HTTP", () => {
  let p: Pair;
  before(async () => {
    // the Relay allows plaintext and 300 s of skew; its Cache neither, and keeps 100 bytes per recipient
    p = await pair(81, { allowPlaintext: false, proofClockSkewSeconds: 10, maxBytesPerRecipient: 100 });
  });
  after(async () => {
    await p.h.close();
  });

  const both = async (make: (r: Recipient) => Body) => ({
    local: await p.h.post(make(p.inProcess)),
    http: await p.h.post(make(p.overHttp)),
  });

  it('422 plaintext_not_allowed: the Cache refuses the envelope itself, answered as the client’s error', async () => {
    const { local, http } = await both((r) => p.h.envelope(r.did, { payload: { cbor_b64: 'oA==' } }));
    expectFailure(local, 422, 'plaintext_not_allowed');
    assert.deepEqual(comparable(local, CACHE_URL), comparable(http, p.h.cacheHttpUrl!));
  });

  it('400 invalid_timestamp by the Cache’s clock skew (within the Relay’s)', async () => {
    const { local, http } = await both((r) => p.h.envelope(r.did, { timestamp: isoSeconds(p.h.clock.nowMs() + 60_000) }));
    expectFailure(local, 400, 'invalid_timestamp');
    assert.deepEqual(comparable(local, CACHE_URL), comparable(http, p.h.cacheHttpUrl!));
  });

  it('429 storage_quota_exceeded at the Cache → 502 upstream_unavailable naming it', async () => {
    const { local, http } = await both((r) => p.h.envelope(r.did));
    expectFailure(local, 502, 'upstream_unavailable');
    assert.equal(local.body.cache_result, 'storage_quota_exceeded');
    assert.deepEqual((local.body.details as Body).failures, [{ endpoint: CACHE_URL, reason: 'HTTP 429 storage_quota_exceeded' }]);
    assert.deepEqual(comparable(local, CACHE_URL), comparable(http, p.h.cacheHttpUrl!));
  });
});

describe('Relay → own Cache in-process: a full mailbox', () => {
  let p: Pair;
  before(async () => {
    p = await pair(91, { storageBudgetBytes: 1 });
  });
  after(async () => {
    await p.h.close();
  });

  it('507 insufficient_storage both ways (profile platform)', async () => {
    const local = await p.h.post(p.h.envelope(p.inProcess.did));
    const http = await p.h.post(p.h.envelope(p.overHttp.did));
    expectFailure(local, 507, 'insufficient_storage');
    assert.equal(local.body.cache_result, 'insufficient_storage');
    assert.deepEqual(comparable(local, CACHE_URL), comparable(http, p.h.cacheHttpUrl!));
  });
});
