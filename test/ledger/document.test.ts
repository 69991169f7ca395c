/** Document patches (ledger-rules.md §5.2) and document replacement v2 (§5.6). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { concatBytes } from '../../src/base/bytes.js';
import { encodeDocument, type DidDocument, type Service } from '../../src/protocol/document.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { aliasCall, assertRejected, defaultDocument, didOf, Harness, patchCall, replaceDocumentCall, rootSigner, seedKey, serviceOf, vmOf } from './harness.js';

const key7 = seedKey(7);
const key8 = seedKey(8);
const key5 = seedKey(5);
const A = didOf(21);
const B = didOf(22);
const root = rootSigner(key7);

function setup(doc?: DidDocument): Harness {
  const h = new Harness();
  h.register(A, key7, doc ? { doc } : {});
  h.register(B, key8);
  return h;
}

const emptyDoc = (did: string): DidDocument => ({ id: did, verificationMethod: [], authentication: null, keyAgreement: [], service: null });

test('patches: every action applies, the document nonce advances, version +1 each', (t) => {
  const h = setup();
  t.after(() => h.close());
  let n = 0n;
  const step = (call: ReturnType<typeof patchCall>) => {
    const v = h.record(A)!.version;
    h.apply(call);
    n++;
    assert.equal(h.headNonce('document_nonce', A), n);
    assert.equal(h.record(A)!.version, v + 1);
    return h.record(A)!.document!;
  };
  const k2 = vmOf(A, 'k2', key8);
  let d = step(patchCall('add_verification_method', A, k2, root, { nonce: n }));
  assert.deepEqual(
    d.verificationMethod.map((v) => v.id),
    [`${A}#root`, `${A}#k2`],
  );
  const k2b = { ...k2, type: 'Multikey', publicKeyMultibase: vmOf(A, 'x', key5).publicKeyMultibase };
  d = step(patchCall('update_verification_method', A, k2b, root, { nonce: n }));
  assert.deepEqual(d.verificationMethod[1], k2b, 'replaced in place');
  d = step(patchCall('add_authentication', A, k2.id, root, { nonce: n }));
  assert.deepEqual(d.authentication, [`${A}#root`, k2.id]);
  d = step(patchCall('remove_authentication', A, k2.id, root, { nonce: n }));
  assert.deepEqual(d.authentication, [`${A}#root`]);
  d = step(patchCall('remove_verification_method', A, k2.id, root, { nonce: n }));
  assert.deepEqual(
    d.verificationMethod.map((v) => v.id),
    [`${A}#root`],
  );
  const ka = vmOf(A, 'x1', key5, { type: 'X25519KeyAgreementKey2020' });
  d = step(patchCall('add_key_agreement', A, ka, root, { nonce: n }));
  assert.deepEqual(d.keyAgreement, [ka]);
  const ka2 = { ...ka, publicKeyMultibase: 'zChanged' };
  d = step(patchCall('update_key_agreement', A, ka2, root, { nonce: n }));
  assert.deepEqual(d.keyAgreement, [ka2]);
  d = step(patchCall('remove_key_agreement', A, ka.id, root, { nonce: n }));
  assert.deepEqual(d.keyAgreement, []);
  const relay = serviceOf(A, 'relay', { type: 'PlatformRelayService', priority: 5 });
  d = step(patchCall('add_service', A, relay, root, { nonce: n }));
  assert.deepEqual(
    d.service!.map((s) => s.id),
    [`${A}#cache`, relay.id],
  );
  const relay2: Service = { ...relay, serviceEndpoint: ['https://r1.example', 'https://r2.example'], authorization: [] };
  d = step(patchCall('update_service', A, relay2, root, { nonce: n }));
  assert.deepEqual(d.service![1], relay2);
  step(patchCall('remove_service', A, relay.id, root, { nonce: n }));
  d = step(patchCall('remove_service', A, `${A}#cache`, root, { nonce: n }));
  assert.equal(d.service, null, 'empty service list becomes None');
  d = step(patchCall('remove_authentication', A, `${A}#root`, root, { nonce: n }));
  assert.equal(d.authentication, null, 'empty authentication becomes None');
  assert.equal(d.verificationMethod.length, 1, 'the VM itself stays');
  assert.equal(h.headNonce('alias_nonce', A), 0n);
});

test('patches: apply errors of the §5.2 table', (t) => {
  const h = setup();
  t.after(() => h.close());
  const k = (frag: string) => vmOf(A, frag, key8);
  const cases: [string, ReturnType<typeof patchCall>, string][] = [
    ['add vm: invalid (foreign controller)', patchCall('add_verification_method', A, { ...k('z'), controller: B }, root), 'InvalidDocument'],
    ['add vm: invalid (empty type)', patchCall('add_verification_method', A, { ...k('z'), type: '' }, root), 'InvalidDocument'],
    ['add vm: exists', patchCall('add_verification_method', A, vmOf(A, 'root', key8), root), 'VerificationMethodAlreadyExists'],
    ['update vm: absent', patchCall('update_verification_method', A, k('nope'), root), 'VerificationMethodNotFound'],
    ['update vm: invalid before absent', patchCall('update_verification_method', A, { ...k('nope'), publicKeyMultibase: '' }, root), 'InvalidDocument'],
    ['remove vm: in use (before existence)', patchCall('remove_verification_method', A, `${A}#root`, root), 'VerificationMethodInUse'],
    ['remove vm: absent', patchCall('remove_verification_method', A, `${A}#nope`, root), 'VerificationMethodNotFound'],
    ['add auth: no such vm', patchCall('add_authentication', A, `${A}#nope`, root), 'VerificationMethodNotFound'],
    ['add auth: already', patchCall('add_authentication', A, `${A}#root`, root), 'AuthenticationAlreadyExists'],
    ['remove auth: absent', patchCall('remove_authentication', A, `${A}#nope`, root), 'AuthenticationNotFound'],
    ['add ka: invalid', patchCall('add_key_agreement', A, { ...k('x'), id: '' }, root), 'InvalidDocument'],
    ['update ka: absent', patchCall('update_key_agreement', A, k('x'), root), 'KeyAgreementNotFound'],
    ['remove ka: absent', patchCall('remove_key_agreement', A, `${A}#x`, root), 'KeyAgreementNotFound'],
    ['add service: invalid (no endpoint)', patchCall('add_service', A, serviceOf(A, 's', { serviceEndpoint: [] }), root), 'InvalidDocument'],
    ['add service: empty authorization entry', patchCall('add_service', A, serviceOf(A, 's', { authorization: [''] }), root), 'InvalidDocument'],
    ['add service: exists', patchCall('add_service', A, serviceOf(A, 'cache'), root), 'ServiceAlreadyExists'],
    ['update service: absent', patchCall('update_service', A, serviceOf(A, 'nope'), root), 'ServiceNotFound'],
    ['update service: invalid', patchCall('update_service', A, serviceOf(A, 'cache', { type: '' }), root), 'InvalidDocument'],
    ['remove service: absent', patchCall('remove_service', A, `${A}#nope`, root), 'ServiceNotFound'],
  ];
  for (const [name, call, err] of cases) assert.equal(h.ledger.check(call)?.errorName, err, name);
  assert.equal(h.poolNonce('document_nonce', A), 0n);
});

test('patches: capacity limits — 6th VM / KA and 5th authentication are InvalidDocument, 5th service ServiceTooLong', (t) => {
  const h = setup();
  t.after(() => h.close());
  let n = 0n;
  for (let i = 1; i < 5; i++) h.apply(patchCall('add_verification_method', A, vmOf(A, `k${i}`, key8), root, { nonce: n++ }));
  assertRejected(h, patchCall('add_verification_method', A, vmOf(A, 'k5', key8), root, { nonce: n }), 'InvalidDocument');
  for (let i = 1; i < 4; i++) h.apply(patchCall('add_authentication', A, `${A}#k${i}`, root, { nonce: n++ }));
  assertRejected(h, patchCall('add_authentication', A, `${A}#k4`, root, { nonce: n }), 'InvalidDocument');
  for (let i = 0; i < 5; i++) h.apply(patchCall('add_key_agreement', A, vmOf(A, `x${i}`, key5), root, { nonce: n++ }));
  assertRejected(h, patchCall('add_key_agreement', A, vmOf(A, 'x5', key5), root, { nonce: n }), 'InvalidDocument');
  for (let i = 1; i < 4; i++) h.apply(patchCall('add_service', A, serviceOf(A, `s${i}`), root, { nonce: n++ }));
  assertRejected(h, patchCall('add_service', A, serviceOf(A, 's4'), root, { nonce: n }), 'ServiceTooLong');
  // at capacity, an existing id reports the duplicate (checked before the count)
  assertRejected(h, patchCall('add_verification_method', A, vmOf(A, 'k1', key5), root, { nonce: n }), 'VerificationMethodAlreadyExists');
  assertRejected(h, patchCall('add_authentication', A, `${A}#k2`, root, { nonce: n }), 'AuthenticationAlreadyExists');
  assertRejected(h, patchCall('add_key_agreement', A, vmOf(A, 'x0', key8), root, { nonce: n }), 'KeyAgreementAlreadyExists');
  assertRejected(h, patchCall('add_service', A, serviceOf(A, 's2'), root, { nonce: n }), 'ServiceAlreadyExists');
  const d = h.record(A)!.document!;
  assert.equal(d.verificationMethod.length, 5);
  assert.equal(d.authentication!.length, 4);
  assert.equal(d.keyAgreement.length, 5);
  assert.equal(d.service!.length, 4);
  assert.equal(h.headNonce('document_nonce', A), n);
});

test('patches on an empty (but present) document: lookups report not-found, adds turn None lists into Some', (t) => {
  const h = setup(emptyDoc(A));
  t.after(() => h.close());
  assert.equal(h.ledger.check(patchCall('update_service', A, serviceOf(A, 's'), root))?.errorName, 'ServiceNotFound');
  assert.equal(h.ledger.check(patchCall('remove_authentication', A, `${A}#k`, root))?.errorName, 'AuthenticationNotFound');
  h.apply(patchCall('add_service', A, serviceOf(A, 's'), root));
  assert.deepEqual(h.record(A)!.document!.service, [serviceOf(A, 's')], 'None becomes Some');
  h.apply(patchCall('add_verification_method', A, vmOf(A, 'k', key8), root, { nonce: 1n }));
  h.apply(patchCall('add_authentication', A, `${A}#k`, root, { nonce: 2n }));
  assert.deepEqual(h.record(A)!.document!.authentication, [`${A}#k`]);
  // the new VM signs from now on
  h.apply(patchCall('remove_service', A, `${A}#s`, { keyId: `${A}#k`, key: key8 }, { nonce: 3n }));
  assert.equal(h.record(A)!.document!.service, null);
});

test('patch validation order (§5.2 steps 1–9)', (t) => {
  const h = setup();
  t.after(() => h.close());
  const now = BigInt(h.ledger.poolNowMs());
  const longDid = 'did:p:' + '1'.repeat(123);
  const svc = serviceOf(A, 'new');
  const cases: [string, ReturnType<typeof patchCall>, string][] = [
    // 1 before 2 (id-argument calls only)
    ['id arg 65 + did too long', patchCall('remove_service', longDid, 'i'.repeat(65), root), 'InvalidDocumentPayload'],
    ['id arg 65 (remove vm)', patchCall('remove_verification_method', A, 'i'.repeat(65), root), 'InvalidDocumentPayload'],
    ['id arg 65 (add auth)', patchCall('add_authentication', A, 'i'.repeat(65), root), 'InvalidDocumentPayload'],
    ['id arg 65 (remove ka)', patchCall('remove_key_agreement', A, 'i'.repeat(65), root), 'InvalidDocumentPayload'],
    ['id arg 64 + did too long', patchCall('remove_service', longDid, 'i'.repeat(64), root), 'DidTooLong'],
    // 2 before 3
    ['did too long + long signer', patchCall('add_service', longDid, svc, { keyId: 'k'.repeat(65), key: key7 }), 'DidTooLong'],
    ['long signer', patchCall('add_service', A, svc, { keyId: 'k'.repeat(65), key: key7 }), 'InvalidDocumentPayload'],
    // 4
    ['garbage payload', patchCall('add_service', A, svc, root, { signedPayload: Uint8Array.of(0) }), 'InvalidDocumentPayload'],
    [
      'trailing byte',
      patchCall('add_service', A, svc, root, {
        signedPayload: concatBytes((patchCall('add_service', A, svc, root).args as { signedPayload: Uint8Array }).signedPayload, Uint8Array.of(0)),
      }),
      'InvalidDocumentPayload',
    ],
    // 5: the payload's field equals the call argument, the action matches, signer ids match — before expiry
    ['payload service differs', patchCall('add_service', A, svc, root, { payloadField: { ...svc, priority: 1 }, validUntil: now }), 'InvalidDocumentPayload'],
    ['payload action differs', patchCall('add_service', A, svc, root, { payloadAction: 'UpdateService' }), 'InvalidDocumentPayload'],
    ['payload did differs', patchCall('add_service', A, svc, root, { payloadDid: B }), 'InvalidDocumentPayload'],
    ['payload id differs', patchCall('remove_service', A, `${A}#cache`, root, { payloadField: `${A}#other` }), 'InvalidDocumentPayload'],
    ['call signer differs', patchCall('add_service', A, svc, root, { callSignerKeyId: `${A}#root` }), 'InvalidDocumentPayload'],
    // 6 before 7 / 8
    ['expired + unknown DID', patchCall('add_service', didOf(98), svc, root, { validUntil: now }), 'DocumentAuthorizationExpired'],
    ['expired + wrong nonce', patchCall('add_service', A, svc, root, { validUntil: now, nonce: 9n }), 'DocumentAuthorizationExpired'],
    // 7 before 8
    ['unknown DID + wrong nonce', patchCall('add_service', didOf(98), svc, root, { nonce: 9n }), 'DidNotFound'],
    // 8 before 9
    ['wrong nonce + bad signature', patchCall('add_service', A, svc, root, { nonce: 1n, signature: new Uint8Array(64) }), 'InvalidDocumentNonce'],
    // 9 before apply
    ['bad signature + service exists', patchCall('add_service', A, serviceOf(A, 'cache'), root, { signature: new Uint8Array(64) }), 'InvalidSignature'],
    ['signed by B', patchCall('add_service', A, svc, rootSigner(key8)), 'InvalidSignature'],
  ];
  for (const [name, call, err] of cases) assert.equal(h.ledger.check(call)?.errorName, err, name);
  assert.equal(h.ledger.check(patchCall('add_service', A, svc, root, { validUntil: now + 1n })), null);
});

test('key agreements never sign; a VM with a foreign controller never signs', (t) => {
  const h = setup();
  t.after(() => h.close());
  const ka = vmOf(A, 'x1', key5, { type: 'X25519KeyAgreementKey2020' });
  h.apply(patchCall('add_key_agreement', A, ka, root));
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'ok' }, { keyId: ka.id, key: key5 }), 'InvalidSignature');
  // a VM key with the 32-character literal hazard value verifies only with those literal bytes, so a normal key fails
  const lit = vmOf(A, 'lit', key5, { publicKeyMultibase: 'abcdefghijklmnopqrstuvwxyz012345' });
  h.apply(patchCall('add_verification_method', A, lit, root, { nonce: 1n }));
  assertRejected(h, aliasCall(A, { kind: 'add', alias: 'ok' }, { keyId: lit.id, key: key5 }), 'InvalidSignature');
});

test('patch: the payload struct is compared by value, not by object key order', (t) => {
  const h = setup();
  t.after(() => h.close());
  const svc = serviceOf(A, 'relay', { type: 'PlatformRelayService', priority: 7, authorization: [`${A}#root`] });
  const call = patchCall('add_service', A, svc, root);
  // the same service as a client might build it, keys in another order
  const reordered: Service = {
    priority: 7,
    authorization: [`${A}#root`],
    serviceEndpoint: ['https://cache.example.com'],
    type: 'PlatformRelayService',
    id: `${A}#relay`,
  };
  const call2 = { ...call, args: { ...call.args, service: reordered } } as typeof call;
  assert.equal(h.ledger.check(call2), null);
  const vm = vmOf(A, 'k9', key8);
  const vmCall = patchCall('add_verification_method', A, vm, root);
  const vmReordered = { publicKeyMultibase: vm.publicKeyMultibase, controller: vm.controller, type: vm.type, id: vm.id };
  assert.equal(h.ledger.check({ ...vmCall, args: { ...vmCall.args, method: vmReordered } } as typeof vmCall), null);
  h.apply(call2);
  assert.deepEqual(h.record(A)!.document!.service![1], svc);
});

test('extrinsic arguments beyond their bounds are MalformedExtrinsic before any other check (§2.4)', (t) => {
  const h = setup();
  t.after(() => h.close());
  const longVm = vmOf(A, 'k'.repeat(70), key8); // id > 64 bytes
  const c1 = patchCall('add_verification_method', A, longVm, root);
  const f1 = h.ledger.check(c1);
  assert.equal(f1?.errorName, 'MalformedExtrinsic');
  assert.throws(
    () => h.ledger.submit(c1, { subject: A, action: 'x', limitKey: A }),
    (e: unknown) => (e as { errorName?: string }).errorName === 'MalformedExtrinsic',
  );
  const c2 = patchCall('add_service', 'did:p:' + '1'.repeat(123), serviceOf(A, 's', { serviceEndpoint: Array(6).fill('https://e') }), root);
  assert.equal(h.ledger.check(c2)?.errorName, 'MalformedExtrinsic', 'bound violation beats DidTooLong');
  const c3 = patchCall('update_key_agreement', A, vmOf(A, 'x', key5, { publicKeyMultibase: 'z'.repeat(129) }), root);
  assert.equal(h.ledger.check(c3)?.errorName, 'MalformedExtrinsic');
  assert.equal(h.ledger.pendingEntries().length, 0);
  assert.equal(h.ledger.check(patchCall('add_verification_method', A, vmOf(A, 'k', key8), root)), null, 'within bounds');
});

// ---- document replacement v2 (§5.6) ----

test('replacement v2: replaces the whole document, shares the document nonce, any DID key may sign', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(patchCall('add_service', A, serviceOf(A, 'extra'), root, { nonce: 0n }));
  const next: DidDocument = {
    id: A,
    verificationMethod: [vmOf(A, 'root', key7), vmOf(A, 'k2', key8)],
    authentication: [`${A}#k2`],
    keyAgreement: [vmOf(A, 'x1', key5, { type: 'X25519KeyAgreementKey2020' })],
    service: null,
  };
  const v = h.record(A)!.version;
  assertRejected(h, replaceDocumentCall(A, next, root, { nonce: 0n }), 'InvalidDocumentNonce');
  h.apply(replaceDocumentCall(A, next, { keyId: `${A}#root`, key: key7 }, { nonce: 1n }));
  assert.deepEqual(h.record(A)!.document, next);
  assert.equal(h.record(A)!.version, v + 1);
  assert.equal(h.headNonce('document_nonce', A), 2n);
  // a patch must now use nonce 2; the new VM signs
  assertRejected(h, patchCall('remove_service', A, `${A}#cache`, root, { nonce: 1n }), 'InvalidDocumentNonce');
  h.apply(replaceDocumentCall(A, emptyDoc(A), { keyId: `${A}#k2`, key: key8 }, { nonce: 2n }));
  assert.deepEqual(h.record(A)!.document, emptyDoc(A));
  // the signer is resolved against the CURRENT document: #k2 is gone now
  assertRejected(h, replaceDocumentCall(A, next, { keyId: `${A}#k2`, key: key8 }, { nonce: 3n }), 'InvalidSignature');
  assert.equal(h.headNonce('document_nonce', A), 3n);
});

test('replacement v2 validation order (§5.6 steps 1–8)', (t) => {
  const h = setup();
  t.after(() => h.close());
  const now = BigInt(h.ledger.poolNowMs());
  const good = defaultDocument(A, key7);
  const longDid = 'did:p:' + '1'.repeat(123);
  const badBlob = concatBytes(encodeDocument(good), Uint8Array.of(0));
  const cases: [string, ReturnType<typeof replaceDocumentCall>, string][] = [
    ['did too long + long signer', replaceDocumentCall(longDid, good, { keyId: 'k'.repeat(65), key: key7 }), 'DidTooLong'],
    ['long signer + bad blob', replaceDocumentCall(A, badBlob, { keyId: 'k'.repeat(65), key: key7 }), 'InvalidDocumentPayload'],
    ['bad blob + expired', replaceDocumentCall(A, badBlob, root, { validUntil: now }), 'InvalidDocument'],
    ['blob > 16384', replaceDocumentCall(A, new Uint8Array(16_385), root), 'InvalidDocument'],
    ['structure (doc for B) + expired', replaceDocumentCall(A, defaultDocument(B, key8), root, { validUntil: now }), 'InvalidDocument'],
    [
      'structure dup service + unknown DID',
      replaceDocumentCall(didOf(97), { ...defaultDocument(didOf(97), key7), service: [serviceOf(didOf(97), 's'), serviceOf(didOf(97), 's')] }, root),
      'ServiceAlreadyExists',
    ],
    ['expired + unknown DID', replaceDocumentCall(didOf(97), defaultDocument(didOf(97), key7), root, { validUntil: now }), 'DocumentAuthorizationExpired'],
    ['unknown DID + wrong nonce', replaceDocumentCall(didOf(97), defaultDocument(didOf(97), key7), root, { nonce: 4n }), 'DidNotFound'],
    ['wrong nonce + bad signature', replaceDocumentCall(A, good, root, { nonce: 4n, signature: new Uint8Array(64) }), 'InvalidDocumentNonce'],
    ['bad signature', replaceDocumentCall(A, good, root, { signature: new Uint8Array(64) }), 'InvalidSignature'],
    ['other profile prefix', replaceDocumentCall(A, good, root, { profile: makeProfile('openpayload') }), 'InvalidSignature'],
    ['call signer differs from signed', replaceDocumentCall(A, good, root, { callSignerKeyId: `${A}#root` }), 'InvalidSignature'],
    ['signed by B', replaceDocumentCall(A, good, rootSigner(key8)), 'InvalidSignature'],
  ];
  for (const [name, call, err] of cases) assert.equal(h.ledger.check(call)?.errorName, err, name);
  assert.equal(h.ledger.check(replaceDocumentCall(A, good, root, { validUntil: now + 1n })), null);
});
