/**
 * A Cache in its own process asks the Directory over HTTP (`--directory-url`) and reuses delivery resolutions for
 * `--directory-view-ttl-ms` (default 2 s; src/adapters/directory-view-cache.ts), never the DID records that
 * authenticate proofs: the Directory sits behind a loopback proxy here that counts what it is asked. One Cache keeps
 * the default, one asks every time (`0`), one reuses for 5 minutes (a store the reused resolution would refuse is
 * asked anew). The Cache that keeps the default runs on a manual clock: its 2 s pass only when the test moves it, so a
 * slow machine cannot expire a resolution between two stores.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ManualClock } from '../../src/base/clock.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { isoSeconds, proofHeaders, recipientDocument, registerRecipientAt, type Recipient } from '../cache/harness.js';
import type { DirectoryHarness } from '../support/directory-harness.js';
import { mutate } from '../support/directory-flows.js';
import { fetchJson, httpDirectory } from '../cache/http-support.js';
import { directoryProxy, type DirectoryProxy } from '../support/directory-proxy.js';
import { startTestNode, type TestNode } from '../support/network.js';

const profile = makeProfile('platform');
const enc = encodeURIComponent;

describe("a Cache reuses a remote Directory's answers for --directory-view-ttl-ms", () => {
  let dir: TestNode;
  let proxy: DirectoryProxy;
  let reusing: TestNode;
  let asking: TestNode;
  let long: TestNode;
  let a: Recipient;
  let b: Recipient;
  /** The clock of `reusing`; its stores and proofs are stamped with it. */
  const clock = new ManualClock(Date.now());
  const nowOf = (cache: TestNode) => (cache === reusing ? clock.nowMs() : Date.now());

  before(async () => {
    dir = await startTestNode(['--roles', 'directory']);
    proxy = await directoryProxy(dir.urls.directory!);
    reusing = await startTestNode(['--roles', 'cache', '--directory-url', proxy.url], undefined, { clock });
    asking = await startTestNode(['--roles', 'cache', '--directory-url', proxy.url, '--directory-view-ttl-ms', '0']);
    long = await startTestNode(['--roles', 'cache', '--directory-url', proxy.url, '--directory-view-ttl-ms', '300000']);
    a = await registerRecipientAt(httpDirectory(dir), 81, { cacheEndpoints: [reusing.urls.cache!] });
    b = await registerRecipientAt(httpDirectory(dir), 82, { cacheEndpoints: [asking.urls.cache!] });
  });
  after(async () => {
    await reusing.stop();
    await asking.stop();
    await long.stop();
    await proxy.close();
    await dir.stop();
  });

  const post = (cache: TestNode, r: Recipient) => {
    const body = {
      message_id: randomUUID(),
      to: r.did,
      timestamp: isoSeconds(nowOf(cache)),
      payload: { ciphertext_b64: Buffer.from(randomUUID()).toString('base64') },
    };
    return fetchJson(`${cache.urls.cache}/cache/store`, { body });
  };
  const store = async (cache: TestNode, r: Recipient) => {
    const res = await post(cache, r);
    assert.equal(res.status, 202, JSON.stringify(res.body));
  };
  const summary = async (cache: TestNode, r: Recipient) => {
    const headers = proofHeaders(profile, r, 'summary', '*', { endpoint: cache.urls.cache!, nowMs: nowOf(cache) });
    const res = await fetchJson(`${cache.urls.cache}/cache/summary/${enc(r.did)}`, { headers });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.count;
  };
  const askedFor = (r: Recipient) => proxy.asked(`/delivery-view/${enc(r.did)}`);

  it('stores against one resolution while it is fresh and asks again once it is not; proofs always read the DID record anew', async () => {
    for (let i = 0; i < 3; i++) await store(reusing, a);
    assert.equal(askedFor(a), 1, 'one resolution for three stores');
    assert.equal(await summary(reusing, a), 3);
    assert.equal(await summary(reusing, a), 3);
    assert.equal(askedFor(a), 3, 'each proof asked for the DID record');
    clock.advance(1_999);
    await store(reusing, a);
    assert.equal(askedFor(a), 3, 'still fresh 1.999 s later');
    clock.advance(1);
    await store(reusing, a);
    assert.equal(askedFor(a), 4, 'the resolution was asked for again after 2 s');
  });

  it('asks anew once before refusing a store its reused resolution would refuse (the document changed meanwhile)', async () => {
    const c = await registerRecipientAt(httpDirectory(dir), 83, { cacheEndpoints: [reusing.urls.cache!] });
    const refused = await post(long, c);
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.equal(refused.body.code, 'cache_not_published');
    // the recipient now publishes this Cache; the resolution kept for 5 minutes still says it does not
    const h = httpDirectory(dir) as DirectoryHarness;
    await mutate(h, c.did, c.key, 'replace_document', { document: recipientDocument(c.did, c, { cacheEndpoints: [long.urls.cache!] }) });
    const before = askedFor(c);
    await store(long, c);
    assert.equal(askedFor(c), before + 1, 'asked anew once');
    await store(long, c);
    assert.equal(askedFor(c), before + 1, 'and reused again');
  });

  it("checks a Relay's node-signed stores against its reused node record", async () => {
    const relay = await startTestNode(['--roles', 'relay', '--directory-url', dir.urls.directory!, '--allow-private-endpoints']);
    try {
      await relay.identity.ready;
      const d = await registerRecipientAt(httpDirectory(dir), 84, { cacheEndpoints: [reusing.urls.cache!] });
      for (let i = 0; i < 3; i++) {
        const body = {
          message_id: randomUUID(),
          to: d.did,
          timestamp: isoSeconds(Date.now()),
          payload: { ciphertext_b64: Buffer.from(randomUUID()).toString('base64') },
        };
        const res = await fetchJson(`${relay.urls.relay}/relay`, { body });
        assert.equal(res.status, 202, JSON.stringify(res.body));
        assert.equal(res.body.code, 'cached');
      }
      assert.equal(askedFor({ did: relay.identity.did } as Recipient), 1, "the Relay's node DID asked for once");
      assert.equal(await summary(reusing, d), 3);
    } finally {
      await relay.stop();
    }
  });

  it('with --directory-view-ttl-ms 0 asks the Directory for every store and every proof', async () => {
    for (let i = 0; i < 3; i++) await store(asking, b);
    const afterStores = askedFor(b);
    assert.ok(afterStores >= 3, `asked ${afterStores} times for 3 stores`);
    assert.equal(await summary(asking, b), 3);
    assert.equal(await summary(asking, b), 3);
    assert.ok(askedFor(b) >= afterStores + 2, 'each proof asked again');
  });
});
