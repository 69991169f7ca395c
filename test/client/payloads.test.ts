/**
 * "Local style" requests (no prepare route): the body and canonical payload built by the SDK equal what the
 * shared codec produces and the ledger vectors (ledger-rules.md §12) fix.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toBase64, toHex } from '../../src/base/bytes.js';
import { buildMutationRequest } from '../../src/client/payloads.js';
import { keyPairFromSeed } from '../../src/client/keys.js';
import { documentHash } from '../../src/protocol/document.js';
import { parseDidDocument } from '../../src/protocol/document-json.js';
import { encodeAliasPayload } from '../../src/protocol/payloads/alias.js';
import { encodeControlPayload } from '../../src/protocol/payloads/control.js';
import { encodeDocumentPatchPayload } from '../../src/protocol/payloads/document-patch.js';
import { documentReplacementSigningBytes } from '../../src/protocol/payloads/document-replacement.js';
import { encodeRootKeyPayload } from '../../src/protocol/payloads/root-key.js';
import { makeProfile, PLATFORM } from '../../src/protocol/profile.js';
import type { DidDocumentJson, ServiceJson } from '../../src/client/types.js';
import { hex, vectors as V } from '../vectors/ledger-vectors.js';

const KEY7 = keyPairFromSeed(hex(V.keys.seed7.seed_hex));
const DID = V.V1.did;
const VU = V.V1.valid_until;

test('V1: add_alias request and payload (alias normalised, decimal strings, 0x canonical_payload)', () => {
  const b = buildMutationRequest(PLATFORM, DID, 'add_alias', { alias: ' SalesGroup ' }, { nonce: 0n, validUntil: VU, signerKeyId: 'root' });
  assert.equal(toHex(b.payload), V.V1.payload_hex);
  assert.deepEqual(b.request, {
    did: DID,
    action: 'add_alias',
    alias: 'salesgroup',
    nonce: '0',
    valid_until: VU,
    signer_key_id: 'root',
    canonical_payload: `0x${V.V1.payload_hex}`,
  });
  assert.equal(toBase64(KEY7.sign(b.payload)), V.V1.signature_b64);
  const op = buildMutationRequest(
    makeProfile('openpayload'),
    V.V1.openpayload_did,
    'add_alias',
    { alias: 'salesgroup' },
    { nonce: 0, validUntil: BigInt(VU), signerKeyId: 'root' },
  );
  assert.equal(toHex(op.payload), V.V1.openpayload_payload_hex);
});

test('V2: AddService payload with a VM signer', () => {
  const service = V.V2.service as ServiceJson;
  const b = buildMutationRequest(PLATFORM, DID, 'AddService', { service }, { nonce: V.V2.nonce, validUntil: VU, signerKeyId: V.V2.signer_key_id });
  assert.equal(toHex(b.payload), V.V2.payload_hex);
  assert.deepEqual(b.request.service, service, 'objects are sent exactly as given');
  // a string endpoint is the same as a one-element list (ledger-rules.md §3.3)
  const one = buildMutationRequest(
    PLATFORM,
    DID,
    'AddService',
    { service: { ...service, serviceEndpoint: 'https://cache.example.com' } },
    { nonce: 3, validUntil: VU, signerKeyId: V.V2.signer_key_id },
  );
  assert.equal(toHex(one.payload), V.V2.payload_hex);
});

test('V3: control payloads (delete_did, add_device)', () => {
  const del = buildMutationRequest(PLATFORM, DID, 'delete_did', {}, { nonce: 1, validUntil: VU, signerKeyId: 'root' });
  assert.equal(toHex(del.payload), V.V3.delete.payload_hex);
  assert.deepEqual(Object.keys(del.request), ['did', 'action', 'nonce', 'valid_until', 'signer_key_id', 'canonical_payload']);
  const add = buildMutationRequest(PLATFORM, DID, 'add_device', { device_id: 'phone-1' }, { nonce: 0, validUntil: VU, signerKeyId: 'root' });
  assert.equal(toHex(add.payload), V.V3.add_device.payload_hex);
});

test('V6: replace_document carries timestamp v2:<nonce>:<valid_until>, pubkey, and the profile-prefixed bytes', () => {
  const doc = V.V5.document_json as unknown as DidDocumentJson;
  const b = buildMutationRequest(
    PLATFORM,
    V.V6.did,
    'replace_document',
    { document: doc },
    { nonce: V.V6.document_nonce, validUntil: V.V6.valid_until, signerKeyId: 'root', pubkey: KEY7.publicKey },
  );
  assert.equal(toHex(b.payload), V.V6.signed_bytes_hex);
  assert.equal(b.request.timestamp, V.V6.token);
  assert.equal(b.request.pubkey, `0x${V.keys.seed7.public_key_hex}`);
  assert.equal(b.request.document, doc);
  assert.equal(b.request.nonce, '7');
  assert.equal(toHex(KEY7.sign(b.payload)), V.V6.signature_hex);
});

test('every other action equals the shared codec built by hand', () => {
  const auth = { nonce: 4n, validUntil: 1_700_000_060_000n, signerKeyId: 'root' };
  const opts = { nonce: '4', validUntil: '1700000060000', signerKeyId: 'root' };
  const vm = { id: `${DID}#k2`, type: 'Ed25519VerificationKey2020', controller: DID, publicKeyMultibase: V.keys.seed7.multibase_ed01 };
  const b = (a: Parameters<typeof buildMutationRequest>[2], f: Record<string, unknown>) =>
    toHex(buildMutationRequest(PLATFORM, DID, a, f as never, opts).payload);
  const alias = (action: 'Update' | 'Remove', x: Partial<{ alias: string; oldAlias: string; newAlias: string }>) =>
    toHex(encodeAliasPayload({ did: DID, action, alias: x.alias ?? null, oldAlias: x.oldAlias ?? null, newAlias: x.newAlias ?? null, ...auth }));
  assert.equal(b('update_alias', { old_alias: 'A', new_alias: ' B ' }), alias('Update', { oldAlias: 'a', newAlias: 'b' }));
  assert.equal(b('remove_alias', { alias: 'X' }), alias('Remove', { alias: 'x' }));
  const ctl = (action: Parameters<typeof encodeControlPayload>[0]['action']) => toHex(encodeControlPayload({ did: DID, action, ...auth }));
  assert.equal(b('update_device', { device_id: 'a/1', new_device_id: 'b' }), ctl({ kind: 'UpdateDevice', oldDeviceId: 'a/1', newDeviceId: 'b' }));
  assert.equal(b('remove_device', { device_id: 'a' }), ctl({ kind: 'RemoveDevice', deviceId: 'a' }));
  assert.equal(b('tombstone_device', { device_id: 'a' }), ctl({ kind: 'TombstoneDevice', deviceId: 'a' }));
  assert.equal(b('deactivate_did', {}), ctl({ kind: 'DeactivateDid' }));
  const pk = hex(V.keys.seed9.public_key_hex);
  const root = toHex(encodeRootKeyPayload({ did: DID, newRootPubkey: pk, ...auth }));
  assert.ok(root.includes(`80${V.keys.seed9.public_key_hex}`), 'new key is a bounded vector: 80 ‖ 32 bytes');
  for (const form of [`0x${V.keys.seed9.public_key_hex}`, V.keys.seed9.public_key_hex.toUpperCase()]) {
    const r = buildMutationRequest(PLATFORM, DID, 'UpdateRootPubkey', { new_root_pubkey: form }, opts);
    assert.equal(toHex(r.payload), root);
    assert.equal(r.request.new_root_pubkey, `0x${V.keys.seed9.public_key_hex}`, 'request carries 0x + lowercase hex');
  }
  const patch = (action: Parameters<typeof encodeDocumentPatchPayload>[0]['action'], x: Partial<Parameters<typeof encodeDocumentPatchPayload>[0]>) =>
    toHex(encodeDocumentPatchPayload({ did: DID, action, verificationMethod: null, keyAgreement: null, service: null, id: null, ...x, ...auth }));
  assert.equal(b('AddVerificationMethod', { verification_method: vm }), patch('AddVerificationMethod', { verificationMethod: vm }));
  assert.equal(b('UpdateVerificationMethod', { verification_method: vm }), patch('UpdateVerificationMethod', { verificationMethod: vm }));
  assert.equal(b('AddKeyAgreement', { key_agreement: vm }), patch('AddKeyAgreement', { keyAgreement: vm }));
  assert.equal(b('UpdateKeyAgreement', { key_agreement: vm }), patch('UpdateKeyAgreement', { keyAgreement: vm }));
  const svc = { id: `${DID}#r`, type: 'PlatformRelayService', serviceEndpoint: 'https://r.example' };
  const svcStruct = { id: svc.id, type: svc.type, serviceEndpoint: [svc.serviceEndpoint], authorization: null, priority: null };
  assert.equal(b('UpdateService', { service: svc }), patch('UpdateService', { service: svcStruct }));
  for (const a of ['RemoveVerificationMethod', 'AddAuthentication', 'RemoveAuthentication', 'RemoveKeyAgreement', 'RemoveService'] as const) {
    assert.equal(b(a, { id: `${DID}#k2` }), patch(a, { id: `${DID}#k2` }), a);
  }
  const doc = { id: DID, verificationMethod: [vm], authentication: [vm.id] };
  assert.equal(
    b('replace_document', { document: doc }),
    toHex(
      documentReplacementSigningBytes(PLATFORM, {
        did: DID,
        documentHash: documentHash(parseDidDocument(doc, DID)),
        documentNonce: 4n,
        validUntil: auth.validUntil,
        signerKeyId: 'root',
      }),
    ),
  );
});

test('invalid input is refused before anything is signed', () => {
  const opts = { nonce: 0, validUntil: 1, signerKeyId: 'root' };
  assert.throws(() => buildMutationRequest(PLATFORM, DID, 'add_alias', { alias: 'no spaces inside' }, opts));
  assert.throws(() => buildMutationRequest(PLATFORM, DID, 'UpdateRootPubkey', { new_root_pubkey: 'abc' }, opts));
  assert.throws(() => buildMutationRequest(PLATFORM, DID, 'add_device', { device_id: 'd' }, { ...opts, nonce: '01' }), RangeError);
  assert.throws(() => buildMutationRequest(PLATFORM, DID, 'add_device', { device_id: 'd' }, { ...opts, nonce: -1 }), RangeError);
  const doc = { id: DID, '@context': 'x' } as unknown as DidDocumentJson;
  assert.throws(() => buildMutationRequest(PLATFORM, DID, 'replace_document', { document: doc }, opts));
});
