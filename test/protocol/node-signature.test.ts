/** Node-request verification (src/protocol/node-signature.ts, §10.6): a valid request and each refusal's reason. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { keyPairFromSeed } from '../../src/crypto/ed25519.js';
import type { DidDocument } from '../../src/protocol/document.js';
import { multibaseEd25519 } from '../../src/protocol/keys.js';
import { NODE_HEADERS, signNodeRequest, verifyNodeRequest, type NodeIdentity, type NodeRequestCheck } from '../../src/protocol/node-signature.js';
import { PLATFORM } from '../../src/protocol/profile.js';

const DID = 'did:platform:node1';
const key = keyPairFromSeed(new Uint8Array(32).fill(9));
const other = keyPairFromSeed(new Uint8Array(32).fill(10));
const identity: NodeIdentity = { did: DID, serviceId: `${DID}#relay`, keyId: `${DID}#key-1`, key };
const document: DidDocument = {
  id: DID,
  verificationMethod: [{ id: `${DID}#key-1`, type: 'Ed25519VerificationKey2020', controller: DID, publicKeyMultibase: multibaseEd25519(key.publicKey) }],
  authentication: null,
  keyAgreement: [],
  service: [
    { id: `${DID}#relay`, type: PLATFORM.relayServiceType, serviceEndpoint: ['https://relay.example'], authorization: [`${DID}#key-1`], priority: null },
  ],
};
const URL_ = 'https://cache.example/cache/store';
const NOW = Date.parse('2026-11-24T10:00:00Z');
const body = new TextEncoder().encode('{"to":"did:platform:bob"}');
const request = { method: 'POST', url: URL_, body, timestamp: '2026-11-24T10:00:00Z', nonce: '6f1c0f8e-6c2a-4b9e-9a35-2f0f7b3c1d2e' };

function check(headers: Record<string, string>, over: Partial<NodeRequestCheck> = {}): NodeRequestCheck {
  return {
    profile: PLATFORM,
    headers: {
      nodeDid: headers['X-DDN-Node-DID'],
      serviceId: headers['X-DDN-Node-Service-Id'],
      keyId: headers['X-DDN-Node-Key-Id'],
      timestamp: headers['X-DDN-Node-Timestamp'],
      nonce: headers['X-DDN-Node-Nonce'],
      signature: headers['X-DDN-Node-Signature'],
    },
    nodeRecord: { deactivated: false, document },
    method: 'POST',
    candidateUrls: [URL_],
    body,
    nowMs: NOW,
    skewSeconds: 300,
    serviceType: PLATFORM.relayServiceType,
    ...over,
  };
}

/** The sync verdict: the verified request, or the refusal's `details.reason`. */
function verdict(run: () => unknown): unknown {
  try {
    return run();
  } catch (err) {
    return (err as { details?: { reason?: string } }).details?.reason ?? err;
  }
}

describe('verifyNodeRequest', () => {
  it('accepts a valid request and refuses each fault with its reason', () => {
    const good = signNodeRequest(PLATFORM, identity, request);
    const forged = signNodeRequest(PLATFORM, { ...identity, key: other }, request);
    const cases: NodeRequestCheck[] = [
      check(good),
      check(good, { candidateUrls: ['https://other.example/cache/store', URL_] }),
      check(good, { candidateUrls: ['https://other.example/cache/store'] }),
      check(good, { body: new TextEncoder().encode('{"to":"did:platform:eve"}') }),
      check(forged),
      check({ ...good, 'X-DDN-Node-Signature': 'AAAA' }),
      check(good, { nodeRecord: null }),
      check(good, { nowMs: NOW + 301_000 }),
    ];
    const expected = ['ok', 'ok', 'bad_signature', 'bad_signature', 'bad_signature', 'invalid_signature_encoding', 'node_not_found', 'timestamp_out_of_window'];
    for (const [i, c] of cases.entries()) {
      const got = verdict(() => verifyNodeRequest(c));
      assert.equal(typeof got === 'object' ? 'ok' : got, expected[i], `case ${i}`);
    }
  });

  it('signs under exactly the six header names the receiver reads (written out as literals in signedHeaders)', () => {
    assert.deepEqual(Object.keys(signNodeRequest(PLATFORM, identity, request)), Object.values(NODE_HEADERS));
  });

  it('with the timing already checked by the caller, checks only the window at its own now', () => {
    const good = signNodeRequest(PLATFORM, identity, request);
    const ts = Date.parse(request.timestamp);
    const ok = verifyNodeRequest(check(good, { timestampMs: ts }));
    assert.equal(ok.nonceExpiresAtMs, NOW + 300_000);
    // the lookup took long enough for the timestamp to leave the window: refused as before
    assert.equal(
      verdict(() => verifyNodeRequest(check(good, { timestampMs: ts, nowMs: NOW + 301_000 }))),
      'timestamp_out_of_window',
    );
    // the expiry is computed from the timestamp given, as from the one parsed
    assert.equal(verifyNodeRequest(check(good, { timestampMs: ts, nowMs: NOW - 1000 })).nonceExpiresAtMs, NOW + 300_000);
  });
});
