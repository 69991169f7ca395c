/**
 * A full Cache through the Relay (docs/api.md, "A full Cache through the Relay"): when every Cache tried answered
 * 507, base delivery answers 507 `insufficient_storage` on profile `platform` (deployed senders retry 502 eight
 * times), 502 `upstream_unavailable` on `openpayload` (the spec's table has no Cache code under 507), and 502 on
 * either when any Cache failed otherwise. The Relay's own storage failing is 507 `insufficient_storage` on either
 * profile, so both profiles' documents list it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import { createHttpServer, json, type HttpServer } from '../../src/http/server.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { everyCacheFull, type StoreReport } from '../../src/relay/base-delivery.js';
import { RELAY_POST_ERRORS, relayPostErrors } from '../../src/relay/error-codes.js';
import { BaseDidDeliveryExecutor, type DeliveryJob } from '../../src/relay/executor.js';
import type { Recipient } from '../cache/harness.js';
import { expectFailure, startRelay, type RelayHarness } from './harness.js';
import { injectChecked } from '../support/inject-contract.js';

type Body = Record<string, unknown>;

describe('Relay: a full Cache', () => {
  let h: RelayHarness;
  let full: Recipient;
  let fullThenBroken: Recipient;
  let fakeCache: HttpServer;

  before(async () => {
    h = await startRelay({ storeRetry: { attempts: 2, backoffMs: 1 } });
    fakeCache = createHttpServer({ name: 'cache', logger: false, bodyLimitBytes: 1 << 20, tooLargeCode: 'envelope_too_large' });
    fakeCache.route('POST', '/full/cache/store', () => {
      throw new DdnError('insufficient_storage', 'the Cache is out of storage');
    });
    fakeCache.route('POST', '/broken/cache/store', () => json(500, { code: 'internal_error', error: 'internal_error' }));
    await fakeCache.fastify.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(fakeCache.fastify.server.address() as { port: number }).port}`;
    full = await h.registerRecipient(81, { cacheEndpoints: [`${base}/full`, `${base}/full`] });
    fullThenBroken = await h.registerRecipient(82, { cacheEndpoints: [`${base}/full`, `${base}/broken`] });
    h.dir.settle();
  });
  after(async () => {
    await fakeCache.fastify.close();
    await h.close();
  });

  it('every Cache answered 507 → 507 insufficient_storage, with the attempts and each failure', async () => {
    const res = await h.post(h.envelope(full.did));
    expectFailure(res, 507, 'insufficient_storage');
    assert.equal(res.body.cache_attempted, true);
    assert.equal(res.body.cache_result, 'insufficient_storage');
    assert.equal(res.body.retry_count, 4, '507 is retried at each endpoint like any transient failure');
    const failures = (res.body.details as Body).failures as { reason: string }[];
    assert.deepEqual(
      failures.map((f) => f.reason),
      ['HTTP 507 insufficient_storage'],
    );
    assert.equal(res.headers['retry-after'], undefined);
  });

  it('one Cache full and another broken → 502 upstream_unavailable', async () => {
    expectFailure(await h.post(h.envelope(fullThenBroken.did)), 502, 'upstream_unavailable');
  });

  it('on profile openpayload every Cache full is still the spec’s 502', async () => {
    const storer = {
      store: () => Promise.resolve({ ok: false as const, attempts: 1, cacheResult: 'insufficient_storage', storageFull: true as const }),
    };
    // a chunk set (never pushed live) to a recipient with one Cache service of the profile's type
    const refusal = (p: string) => {
      const profile = makeProfile(p);
      const did = `did:${p}:8DfbjXLth7APvt3qQPgtf`;
      const service = { id: `${did}#cache`, type: profile.cacheServiceType, serviceEndpoint: ['https://c.example'], authorization: null, priority: null };
      const job = {
        envelopes: [Buffer.from('{}')],
        chunked: true,
        view: { recipient: { did, document: { id: did, service: [service] } }, persona: null, personaState: null, policy: null },
      } as unknown as DeliveryJob;
      return new BaseDidDeliveryExecutor({ profile, identity: h.identity, storer }).execute(job).then(
        () => assert.fail('delivered'),
        (e: unknown) => (e as DdnError).code,
      );
    };
    assert.equal(await refusal('openpayload'), 'upstream_unavailable');
    assert.equal(await refusal('platform'), 'insufficient_storage');
  });

  it("the Relay's own storage failing is 507 insufficient_storage on either profile, and its document lists it", async () => {
    const r = await h.registerRecipient(83);
    h.dir.settle();
    const claim = h.store.claimNonce.bind(h.store);
    h.store.claimNonce = () => Promise.reject(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }));
    try {
      const res = await h.postAsNode(h.identity, h.envelope(r.did));
      expectFailure(res, 507, 'insufficient_storage');
      assert.equal(res.body.cache_attempted, false, 'refused before any Cache was tried');
    } finally {
      h.store.claimNonce = claim;
    }
    const res = await injectChecked(h.server, { method: 'GET', url: '/openapi.json' });
    const doc = res.json() as { paths: Record<string, { post: { responses: Record<string, { content: Record<string, { schema: unknown }> }> } }> };
    const at507 = JSON.stringify(doc.paths['/relay']!.post.responses['507']);
    assert.match(at507, /insufficient_storage/);
    assert.match(at507, /staging_persist_failed/);
    // not a profile's choice: the codes of POST /relay take no profile (test/app/openapi-types compares the documents)
    assert.deepEqual(RELAY_POST_ERRORS[507], ['staging_persist_failed', 'insufficient_storage']);
    assert.ok(relayPostErrors().includes('insufficient_storage'));
  });

  it('everyCacheFull: nothing accepted, no envelope refusal, every failure a 507', () => {
    const report: StoreReport = {
      accepted: [],
      attempted: ['a', 'b'],
      attempts: 6,
      lastFailure: 'insufficient_storage',
      retention: null,
      envelopeRefusal: null,
      otherFailures: 2,
      storageFullFailures: 2,
      failures: [],
    };
    assert.equal(everyCacheFull(report), true);
    assert.equal(everyCacheFull({ ...report, storageFullFailures: 1 }), false);
    assert.equal(everyCacheFull({ ...report, accepted: ['a'] }), false);
    assert.equal(everyCacheFull({ ...report, otherFailures: 0, storageFullFailures: 0 }), false);
  });
});
