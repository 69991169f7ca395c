/**
 * Strict decoding of every signed payload and of the document blob (ledger-rules.md §1.4, §3.3, §4.1–§4.4):
 * round trip, trailing bytes, over-long fields (the bound itself passes), enum/option tags, non-minimal compacts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { concatBytes, toHex } from '../../src/base/bytes.js';
import { ScaleDecodeError, ScaleWriter } from '../../src/codec/scale.js';
import { decodeDocument, encodeDocument, type DidDocument, type Service, type VerificationMethod } from '../../src/protocol/document.js';
import { decodeAliasPayload, encodeAliasPayload, type AliasPayload } from '../../src/protocol/payloads/alias.js';
import { decodeControlPayload, encodeControlPayload, type ControlPayload } from '../../src/protocol/payloads/control.js';
import {
  DOCUMENT_ACTIONS,
  decodeDocumentPatchPayload,
  documentActionField,
  encodeDocumentPatchPayload,
  type DocumentPatchPayload,
} from '../../src/protocol/payloads/document-patch.js';
import { decodeRootKeyPayload, encodeRootKeyPayload, type RootKeyPayload } from '../../src/protocol/payloads/root-key.js';
import { hex, vectors as V } from '../vectors/ledger-vectors.js';

const DID = 'did:platform:entity1111111111';
const s = (n: number, c = 'a'): string => c.repeat(n);

/** Decoding `good` works and re-encodes identically; with one extra byte it fails. */
function assertStrictRoundTrip<T>(bytes: Uint8Array, decode: (b: Uint8Array) => T | undefined, encode: (v: T) => Uint8Array): T {
  const v = decode(bytes);
  assert.ok(v !== undefined, 'decodes');
  assert.deepEqual(encode(v), bytes);
  assert.equal(decode(concatBytes(bytes, Uint8Array.of(0))), undefined, 'trailing byte');
  assert.equal(decode(bytes.subarray(0, bytes.length - 1)), undefined, 'truncated');
  return v;
}

/** Replaces the first compact length byte (single-byte mode) at `at` with its two-byte non-minimal form. */
function nonMinimalAt(bytes: Uint8Array, at: number): Uint8Array {
  const n = bytes[at]! >>> 2;
  assert.equal(bytes[at]! & 3, 0, 'single-byte compact expected');
  const two = Uint8Array.of(((n << 2) | 1) & 0xff, (n << 2) >>> 8);
  return concatBytes(bytes.subarray(0, at), two, bytes.subarray(at + 1));
}

// ---- alias (§4.1) ----

const alias = (p: Partial<AliasPayload> = {}): AliasPayload => ({
  did: DID,
  action: 'Add',
  alias: 'salesgroup',
  oldAlias: null,
  newAlias: null,
  nonce: 0n,
  validUntil: 1_700_000_060_000n,
  signerKeyId: 'root',
  ...p,
});

test('alias payload: strict round trip, bounds did≤128 alias≤64 signer≤64', () => {
  assertStrictRoundTrip(hex(V.V1.payload_hex), decodeAliasPayload, encodeAliasPayload);
  const upd = alias({ action: 'Update', alias: null, oldAlias: 'a', newAlias: 'b', nonce: 5n });
  assert.deepEqual(assertStrictRoundTrip(encodeAliasPayload(upd), decodeAliasPayload, encodeAliasPayload), upd);
  const longDid = `did:platform:${s(128 - 13, 'z')}`;
  assert.ok(decodeAliasPayload(encodeAliasPayload(alias({ did: longDid }))));
  assert.equal(decodeAliasPayload(encodeAliasPayload(alias({ did: longDid + 'z' }))), undefined);
  for (const field of ['alias', 'oldAlias', 'newAlias', 'signerKeyId'] as const) {
    assert.ok(decodeAliasPayload(encodeAliasPayload(alias({ [field]: s(64) }))), `${field} 64`);
    assert.equal(decodeAliasPayload(encodeAliasPayload(alias({ [field]: s(65) }))), undefined, `${field} 65`);
  }
});

test('alias payload: action index 3, option tag 2, non-minimal compact all fail', () => {
  const b = hex(V.V1.payload_hex);
  const actionAt = 1 + 29;
  assert.equal(b[actionAt], 0);
  const bad = b.slice();
  bad[actionAt] = 3;
  assert.equal(decodeAliasPayload(bad), undefined);
  bad[actionAt] = 2; // Remove is a valid index
  assert.equal(decodeAliasPayload(bad)?.action, 'Remove');
  const tag = b.slice();
  tag[actionAt + 1] = 2; // alias option tag
  assert.equal(decodeAliasPayload(tag), undefined);
  const noneTag = b.slice();
  noneTag[b.length - 5 - 16 - 1] = 2; // new_alias option tag (just before nonce)
  assert.equal(decodeAliasPayload(noneTag), undefined);
  assert.equal(decodeAliasPayload(nonMinimalAt(b, 0)), undefined, 'did length 29 as 7501');
});

// ---- document patch (§4.2) ----

const VM: VerificationMethod = {
  id: `${DID}#k1`,
  type: 'Ed25519VerificationKey2020',
  controller: DID,
  publicKeyMultibase: V.keys.seed7.multibase_raw,
};
const SVC: Service = {
  id: `${DID}#cache`,
  type: 'PlatformCacheService',
  serviceEndpoint: ['https://cache.example.com'],
  authorization: null,
  priority: null,
};

const patch = (p: Partial<DocumentPatchPayload> = {}): DocumentPatchPayload => ({
  did: DID,
  action: 'AddVerificationMethod',
  verificationMethod: VM,
  keyAgreement: null,
  service: null,
  id: null,
  nonce: 0n,
  validUntil: 1n,
  signerKeyId: 'root',
  ...p,
});

test('document patch payload: every action round-trips with its one field', () => {
  DOCUMENT_ACTIONS.forEach((action, i) => {
    const field = documentActionField(action);
    const p = patch({
      action,
      verificationMethod: field === 'verificationMethod' ? VM : null,
      keyAgreement: field === 'keyAgreement' ? { ...VM, id: `${DID}#x1`, type: 'X25519KeyAgreementKey2020' } : null,
      service: field === 'service' ? SVC : null,
      id: field === 'id' ? `${DID}#k1` : null,
    });
    const bytes = encodeDocumentPatchPayload(p);
    assert.equal(bytes[1 + 29], i, `${action} index`);
    assert.deepEqual(assertStrictRoundTrip(bytes, decodeDocumentPatchPayload, encodeDocumentPatchPayload), p);
  });
  assert.equal(DOCUMENT_ACTIONS.length, 11);
});

test('document patch payload: action 11, struct bounds, non-minimal compact fail', () => {
  const b = encodeDocumentPatchPayload(patch());
  const bad = b.slice();
  bad[1 + 29] = 11;
  assert.equal(decodeDocumentPatchPayload(bad), undefined);
  const cases: [string, Partial<DocumentPatchPayload>, Partial<DocumentPatchPayload>][] = [
    ['vm id', { verificationMethod: { ...VM, id: s(64) } }, { verificationMethod: { ...VM, id: s(65) } }],
    ['vm type', { verificationMethod: { ...VM, type: s(64) } }, { verificationMethod: { ...VM, type: s(65) } }],
    ['vm controller', { verificationMethod: { ...VM, controller: s(64) } }, { verificationMethod: { ...VM, controller: s(65) } }],
    ['vm key', { verificationMethod: { ...VM, publicKeyMultibase: s(128) } }, { verificationMethod: { ...VM, publicKeyMultibase: s(129) } }],
    [
      'endpoints',
      { action: 'AddService', verificationMethod: null, service: { ...SVC, serviceEndpoint: Array(5).fill('e') } },
      { action: 'AddService', verificationMethod: null, service: { ...SVC, serviceEndpoint: Array(6).fill('e') } },
    ],
    [
      'endpoint bytes',
      { action: 'AddService', verificationMethod: null, service: { ...SVC, serviceEndpoint: [s(128)] } },
      { action: 'AddService', verificationMethod: null, service: { ...SVC, serviceEndpoint: [s(129)] } },
    ],
    [
      'authorization count',
      { action: 'AddService', verificationMethod: null, service: { ...SVC, authorization: Array(8).fill('a') } },
      { action: 'AddService', verificationMethod: null, service: { ...SVC, authorization: Array(9).fill('a') } },
    ],
    [
      'authorization bytes',
      { action: 'AddService', verificationMethod: null, service: { ...SVC, authorization: [s(64)] } },
      { action: 'AddService', verificationMethod: null, service: { ...SVC, authorization: [s(65)] } },
    ],
    ['id', { action: 'RemoveService', verificationMethod: null, id: s(64) }, { action: 'RemoveService', verificationMethod: null, id: s(65) }],
    ['signer', { signerKeyId: s(64) }, { signerKeyId: s(65) }],
  ];
  for (const [name, ok, over] of cases) {
    assert.ok(decodeDocumentPatchPayload(encodeDocumentPatchPayload(patch(ok))), `${name} at bound`);
    assert.equal(decodeDocumentPatchPayload(encodeDocumentPatchPayload(patch(over))), undefined, `${name} over bound`);
  }
  // a service with priority: Some(u32) round-trips; the priority option tag 2 fails
  const withPrio = encodeDocumentPatchPayload(patch({ action: 'AddService', verificationMethod: null, service: { ...SVC, priority: 0xffffffff } }));
  assert.equal(decodeDocumentPatchPayload(withPrio)?.service?.priority, 0xffffffff);
  assert.equal(decodeDocumentPatchPayload(nonMinimalAt(b, 0)), undefined);
});

test('V2 payload decodes strictly and rejects a trailing byte', () => {
  const p = assertStrictRoundTrip(hex(V.V2.payload_hex), decodeDocumentPatchPayload, encodeDocumentPatchPayload);
  assert.equal(p.service?.priority, 10);
});

// ---- root key (§4.3) ----

const root = (p: Partial<RootKeyPayload> = {}): RootKeyPayload => ({
  did: DID,
  newRootPubkey: new Uint8Array(32).fill(1),
  nonce: 2n,
  validUntil: 1_700_000_060_000n,
  signerKeyId: 'root',
  ...p,
});

test('root-key payload: 80 ‖ 32 bytes, Bytes≤32 bound, trailing bytes', () => {
  const b = encodeRootKeyPayload(root());
  assert.equal(toHex(b.subarray(30, 31)), '80', 'new_root_pubkey compact prefix');
  assert.deepEqual(assertStrictRoundTrip(b, decodeRootKeyPayload, encodeRootKeyPayload), root());
  assert.equal(decodeRootKeyPayload(encodeRootKeyPayload(root({ newRootPubkey: new Uint8Array(33) }))), undefined);
  // shorter keys decode (the call argument check catches them: InvalidRootPubkey)
  assert.equal(decodeRootKeyPayload(encodeRootKeyPayload(root({ newRootPubkey: new Uint8Array(31) })))?.newRootPubkey.length, 31);
  assert.equal(decodeRootKeyPayload(encodeRootKeyPayload(root({ signerKeyId: s(65) }))), undefined);
  assert.equal(decodeRootKeyPayload(encodeRootKeyPayload(root({ did: `did:p:${s(123)}` }))), undefined);
});

// ---- control (§4.4) ----

const control = (action: ControlPayload['action'], p: Partial<ControlPayload> = {}): ControlPayload => ({
  did: DID,
  action,
  nonce: 0n,
  validUntil: 1_700_000_060_000n,
  signerKeyId: 'root',
  ...p,
});

test('control payload: all eight variants round-trip with their indices', () => {
  const actions: ControlPayload['action'][] = [
    { kind: 'AddDevice', deviceId: 'phone-1' },
    { kind: 'TombstoneDevice', deviceId: 'phone-1' },
    { kind: 'UpdateDevice', oldDeviceId: 'phone-1', newDeviceId: 'phone-2' },
    { kind: 'RemoveDevice', deviceId: 'phone-2' },
    { kind: 'DeactivateDid' },
    { kind: 'SetDeliveryPolicyLinks', links: { recipientPolicy: 'p', tagPolicies: ['t'], personaPolicies: [] } },
    { kind: 'ClearDeliveryPolicyLinks' },
    { kind: 'DeleteDid' },
  ];
  actions.forEach((a, i) => {
    const b = encodeControlPayload(control(a));
    assert.equal(b[1 + 29], i, a.kind);
    assert.deepEqual(assertStrictRoundTrip(b, decodeControlPayload, encodeControlPayload), control(a));
  });
});

test('control payload: index 8, device id ≤ 64, link bounds, did ≤ 128 fail strictly', () => {
  const b = hex(V.V3.delete.payload_hex);
  assertStrictRoundTrip(b, decodeControlPayload, encodeControlPayload);
  const bad = b.slice();
  bad[1 + 29] = 8;
  assert.equal(decodeControlPayload(bad), undefined);
  assert.ok(decodeControlPayload(encodeControlPayload(control({ kind: 'AddDevice', deviceId: s(64) }))));
  assert.equal(decodeControlPayload(encodeControlPayload(control({ kind: 'AddDevice', deviceId: s(65) }))), undefined);
  assert.equal(decodeControlPayload(encodeControlPayload(control({ kind: 'UpdateDevice', oldDeviceId: 'a', newDeviceId: s(65) }))), undefined);
  const links = (tag: number, rp: string | null = null) =>
    encodeControlPayload(control({ kind: 'SetDeliveryPolicyLinks', links: { recipientPolicy: rp, tagPolicies: Array(tag).fill('t'), personaPolicies: [] } }));
  assert.ok(decodeControlPayload(links(8)));
  assert.equal(decodeControlPayload(links(9)), undefined);
  assert.equal(decodeControlPayload(links(0, s(129))), undefined);
  assert.equal(decodeControlPayload(encodeControlPayload(control({ kind: 'DeleteDid' }, { did: s(129) }))), undefined);
  assert.equal(decodeControlPayload(encodeControlPayload(control({ kind: 'DeleteDid' }, { signerKeyId: s(65) }))), undefined);
  assert.equal(decodeControlPayload(nonMinimalAt(b, 0)), undefined);
});

// ---- document blob (§3.3) ----

const doc = (d: Partial<DidDocument> = {}): DidDocument => ({
  id: DID,
  verificationMethod: [VM],
  authentication: [VM.id],
  keyAgreement: [],
  service: [SVC],
  ...d,
});

test('document blob: empty document layout, bounds on every vector and field, trailing bytes', () => {
  const empty = encodeDocument({ id: DID, verificationMethod: [], authentication: null, keyAgreement: [], service: null });
  assert.equal(toHex(empty), toHex(new ScaleWriter().str(DID).finish()) + '00000000');
  assertStrictRoundTrip(
    encodeDocument(doc()),
    (b) => {
      try {
        return decodeDocument(b);
      } catch (e) {
        assert.ok(e instanceof ScaleDecodeError);
        return undefined;
      }
    },
    encodeDocument,
  );
  const vms = (n: number) => Array.from({ length: n }, (_v, i) => ({ ...VM, id: `#k${i}` }));
  const svcs = (n: number) => Array.from({ length: n }, (_v, i) => ({ ...SVC, id: `#s${i}` }));
  const cases: [string, Partial<DidDocument>, Partial<DidDocument>][] = [
    ['id', { id: s(128) }, { id: s(129) }],
    ['vms', { verificationMethod: vms(5) }, { verificationMethod: vms(6) }],
    ['kas', { keyAgreement: vms(5) }, { keyAgreement: vms(6) }],
    ['auth count', { authentication: Array(4).fill('a') }, { authentication: Array(5).fill('a') }],
    ['auth bytes', { authentication: [s(64)] }, { authentication: [s(65)] }],
    ['services', { service: svcs(4) }, { service: svcs(5) }],
    ['ka key', { keyAgreement: [{ ...VM, publicKeyMultibase: s(128) }] }, { keyAgreement: [{ ...VM, publicKeyMultibase: s(129) }] }],
  ];
  for (const [name, ok, over] of cases) {
    assert.doesNotThrow(() => decodeDocument(encodeDocument(doc(ok))), name);
    assert.throws(() => decodeDocument(encodeDocument(doc(over))), ScaleDecodeError, name);
  }
  const b = encodeDocument(doc());
  assert.throws(() => decodeDocument(concatBytes(b, Uint8Array.of(0))), ScaleDecodeError);
  // authentication option tag 2
  const at = b.slice();
  const prefix = new ScaleWriter()
    .str(DID)
    .vec([VM], (w, v) => w.str(v.id).str(v.type).str(v.controller).str(v.publicKeyMultibase))
    .finish();
  assert.equal(at[prefix.length], 1, 'authentication Some');
  at[prefix.length] = 2;
  assert.throws(() => decodeDocument(at), ScaleDecodeError);
});
