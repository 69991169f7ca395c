/**
 * The SDK's LiveReceiver against a real node whose Relay requires live-session proofs (profile platform): without a
 * proof the session is refused with the code; with one (signed per connection, header form) envelopes arrive. And
 * which service and key sign the proof (`liveProofServiceFor`).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { LiveReceiver, liveProofServiceFor } from '../../src/client/live-receiver.js';
import type { RenderedDidDocumentJson } from '../../src/client/types.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { isoSeconds, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { fetchJson, httpDirectory } from '../cache/http-support.js';
import { kid } from '../support/directory-flows.js';
import { startTestNode, type TestNode } from '../support/network.js';

describe('LiveReceiver', () => {
  let node: TestNode;
  let r: Recipient;
  let document: RenderedDidDocumentJson;
  before(async () => {
    node = await startTestNode();
    r = await registerRecipientAt(httpDirectory(node), 71, { cacheEndpoints: [node.urls.cache!] });
    document = (await new DirectoryClient(node.urls.directory!).resolve(r.did)).document!;
  });
  after(() => node.stop());

  it("is refused without a proof, with the Relay's code", async () => {
    const live = new LiveReceiver({ relayUrl: node.urls.relay!, did: r.did, device: 'sdk', onEnvelope: () => undefined });
    await assert.rejects(live.start(), (e: Error & { code?: string; status?: number }) => {
      assert.equal(e.code, 'live_proof_required');
      assert.equal(e.status, 401);
      return true;
    });
    await live.stop();
  });

  it('opens an authenticated session with a proof and receives envelopes as delivered', async () => {
    const service = liveProofServiceFor(PLATFORM, document, r.key.publicKey);
    assert.deepEqual(service, { serviceId: r.serviceId, keyId: r.keyId });
    const got: Record<string, unknown>[] = [];
    let arrived!: () => void;
    const first = new Promise<void>((resolve) => (arrived = resolve));
    const live = new LiveReceiver({
      relayUrl: `${node.urls.relay!}/`,
      did: r.did,
      device: 'sdk',
      proof: { profile: PLATFORM, ...service!, signer: r.key },
      onEnvelope: (e) => {
        got.push(e);
        arrived();
      },
    });
    await live.start();
    const env = { message_id: randomUUID(), to: r.did, timestamp: isoSeconds(Date.now()), payload: { ciphertext_b64: 'AAAA' } };
    const res = await fetchJson(`${node.urls.relay}/relay`, { body: env });
    assert.equal(res.body.code, 'delivered');
    await first;
    assert.deepEqual(got, [env]);
    await live.stop();
  });

  it('liveProofServiceFor: a Relay service first, then a Cache service, only for a usable key', () => {
    const relay = { id: kid(r.did, 'relay'), type: 'PlatformRelayService', serviceEndpoint: 'https://relay.example', authorization: [r.keyId] };
    const withRelay = { ...document, service: [...document.service, relay] };
    assert.deepEqual(liveProofServiceFor(PLATFORM, withRelay, r.key.publicKey), { serviceId: relay.id, keyId: r.keyId });
    // key-2: authorised by #cache though not in authentication (service authorization alone decides, as at the
    // Cache); key-3: in authentication, authorised by no service
    assert.deepEqual(liveProofServiceFor(PLATFORM, document, r.key2.publicKey), { serviceId: kid(r.did, 'cache'), keyId: kid(r.did, 'key-2') });
    assert.equal(liveProofServiceFor(PLATFORM, document, r.key3.publicKey), undefined);
    assert.equal(liveProofServiceFor(PLATFORM, document, r.key.publicKey, kid(r.did, 'key-2')), undefined);
  });
});
