/** The key a DID authorises for a service (src/protocol/service-keys.ts): decoded once while held, the same answer every time. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keyPairFromSeed } from '../../src/crypto/ed25519.js';
import type { DidDocument, Service } from '../../src/protocol/document.js';
import { multibaseEd25519 } from '../../src/protocol/keys.js';
import { authorizedServiceKey, MAX_DECODED_KEYS } from '../../src/protocol/service-keys.js';

const DID = 'did:platform:node1';

function docWith(publicKeyMultibase: string): { document: DidDocument; service: Service } {
  const service: Service = {
    id: `${DID}#relay`,
    type: 'PlatformRelayService',
    serviceEndpoint: ['https://relay.example'],
    authorization: [`${DID}#k`],
    priority: null,
  };
  const document: DidDocument = {
    id: DID,
    verificationMethod: [{ id: `${DID}#k`, type: 'Ed25519VerificationKey2020', controller: DID, publicKeyMultibase }],
    authentication: null,
    keyAgreement: [],
    service: [service],
  };
  return { document, service };
}

test('a service key decodes to the same bytes every time, before and after the decoded keys are emptied', () => {
  const key = keyPairFromSeed(new Uint8Array(32).fill(3)).publicKey;
  const { document, service } = docWith(multibaseEd25519(key));
  const first = authorizedServiceKey(DID, document, service, `${DID}#k`);
  assert.deepEqual(first, key);
  assert.deepEqual(authorizedServiceKey(DID, document, service, `${DID}#k`), key);
  // more distinct keys than are held: the set is emptied and decoding goes on, each key its own bytes
  for (let i = 0; i <= MAX_DECODED_KEYS; i++) {
    const k = new Uint8Array(32);
    new DataView(k.buffer).setUint32(0, i + 1);
    const d = docWith(multibaseEd25519(k));
    assert.deepEqual(authorizedServiceKey(DID, d.document, d.service, `${DID}#k`), k);
  }
  assert.deepEqual(authorizedServiceKey(DID, document, service, `${DID}#k`), key);
  // a key that does not decode stays refused, the second time too
  const bad = docWith('zzzz');
  assert.equal(authorizedServiceKey(DID, bad.document, bad.service, `${DID}#k`), undefined);
  assert.equal(authorizedServiceKey(DID, bad.document, bad.service, `${DID}#k`), undefined);
  // the key's listing in `authorization` is still checked every time
  assert.equal(authorizedServiceKey(DID, document, { ...service, authorization: [] }, `${DID}#k`), undefined);
});
