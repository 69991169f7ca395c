/** Extrinsic encoding (ledger-rules.md §2.4): module/call indices, argument order and bounds, strict decode. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { concatBytes, toHex, utf8 } from '../../src/base/bytes.js';
import { ScaleWriter } from '../../src/codec/scale.js';
import { blake2_256 } from '../../src/crypto/hash.js';
import { decodeExtrinsic, encodeExtrinsic, moduleOf, txHashOf, type Call } from '../../src/ledger/extrinsic.js';

const did = 'did:platform:entity1111111111';
const sig = new Uint8Array(64).fill(0xaa);
const payload = Uint8Array.of(1, 2, 3);
const proof = { signedPayload: payload, signature: sig, signerKeyId: 'root' };
const vm = { id: `${did}#k`, type: 'T', controller: did, publicKeyMultibase: 'zKey' };
const svc = { id: `${did}#s`, type: 'S', serviceEndpoint: ['https://e'], authorization: null, priority: 3 };

const ALL: [Call, number, number][] = [
  [{ name: 'add_alias', args: { did, alias: 'a', ...proof } }, 8, 11],
  [{ name: 'update_alias', args: { did, oldAlias: 'a', newAlias: 'b', ...proof } }, 8, 12],
  [{ name: 'remove_alias', args: { did, alias: 'a', ...proof } }, 8, 13],
  [{ name: 'add_verification_method', args: { did, method: vm, ...proof } }, 8, 14],
  [{ name: 'update_verification_method', args: { did, method: vm, ...proof } }, 8, 15],
  [{ name: 'remove_verification_method', args: { did, methodId: vm.id, ...proof } }, 8, 16],
  [{ name: 'add_authentication', args: { did, methodId: vm.id, ...proof } }, 8, 17],
  [{ name: 'remove_authentication', args: { did, methodId: vm.id, ...proof } }, 8, 18],
  [{ name: 'add_key_agreement', args: { did, keyAgreement: vm, ...proof } }, 8, 19],
  [{ name: 'update_key_agreement', args: { did, keyAgreement: vm, ...proof } }, 8, 20],
  [{ name: 'remove_key_agreement', args: { did, keyId: vm.id, ...proof } }, 8, 21],
  [{ name: 'add_service', args: { did, service: svc, ...proof } }, 8, 22],
  [{ name: 'update_service', args: { did, service: svc, ...proof } }, 8, 23],
  [{ name: 'remove_service', args: { did, serviceId: svc.id, ...proof } }, 8, 24],
  [{ name: 'update_root_pubkey', args: { did, newRootPubkey: new Uint8Array(32), ...proof } }, 8, 25],
  [{ name: 'apply_control_with_proof', args: proof }, 8, 29],
  [
    {
      name: 'register_with_proof_v2',
      args: { did, alias: ' A ', rootPubkey: new Uint8Array(32), expiryMs: 5n, docBlob: Uint8Array.of(0), signature: sig },
    },
    8,
    30,
  ],
  [
    {
      name: 'set_document_with_proof_v2',
      args: { did, docBlob: Uint8Array.of(0), documentNonce: 7n, validUntil: 9n, signerKeyId: 'root', signature: sig },
    },
    8,
    31,
  ],
  [{ name: 'apply_policy_v2_with_proof', args: proof }, 9, 13],
  [{ name: 'apply_persona_with_proof', args: proof }, 9, 15],
  [{ name: 'apply_policy_v3_with_proof', args: proof }, 9, 17],
  [{ name: 'register_application', args: { applicationId: 'app', controlDid: did, signerKeyId: 'root', signature: sig } }, 13, 0],
  [{ name: 'update_application', args: { applicationId: 'app', newControlDid: did, signerKeyId: 'root', signature: sig } }, 13, 1],
  [{ name: 'set_application_status', args: { applicationId: 'app', status: 2, signerKeyId: 'root', signature: sig } }, 13, 2],
  [{ name: 'set_application_domain', args: { applicationId: 'app', domain: 'example.com', signerKeyId: 'root', signature: sig } }, 13, 6],
  [
    {
      name: 'set_application_linked_did',
      args: {
        applicationId: 'app',
        linkedDid: did,
        enabled: true,
        controlSignerKeyId: 'root',
        controlSignature: sig,
        linkedSignerKeyId: 'root',
        linkedSignature: sig,
      },
    },
    13,
    7,
  ],
];

test('every call: module and call index, round trip, tx_hash = blake2_256(bytes)', () => {
  for (const [call, module, index] of ALL) {
    const bytes = encodeExtrinsic(call);
    assert.deepEqual([bytes[0], bytes[1]], [module, index], call.name);
    assert.deepEqual(decodeExtrinsic(bytes), call, call.name);
    assert.deepEqual(txHashOf(bytes), blake2_256(bytes));
    assert.equal(decodeExtrinsic(concatBytes(bytes, Uint8Array.of(0))), undefined, `${call.name}: trailing byte`);
    assert.equal(decodeExtrinsic(bytes.subarray(0, bytes.length - 1)), undefined, `${call.name}: truncated`);
  }
  assert.equal(moduleOf('add_alias'), 'DidRegistry');
  assert.equal(moduleOf('apply_persona_with_proof'), 'DeliveryPolicy');
  assert.equal(moduleOf('set_application_status'), 'ApplicationRegistry');
});

test('argument order and encodings follow the §2.4 table', () => {
  const add = encodeExtrinsic(ALL[0]![0]);
  const expected = new ScaleWriter().u8(8).u8(11).str(did).str('a').bytes(payload).bytes(sig).str('root').finish();
  assert.equal(toHex(add), toHex(expected));
  const reg = encodeExtrinsic(ALL[16]![0]);
  const regExpected = new ScaleWriter()
    .u8(8)
    .u8(30)
    .str(did)
    .option(' A ', (w, v) => w.str(v))
    .bytes(new Uint8Array(32))
    .u64(5n)
    .bytes(Uint8Array.of(0))
    .bytes(sig)
    .finish();
  assert.equal(toHex(reg), toHex(regExpected));
  const setDoc = encodeExtrinsic(ALL[17]![0]);
  const setDocExpected = new ScaleWriter().u8(8).u8(31).str(did).bytes(Uint8Array.of(0)).u64(7n).u64(9n).str('root').bytes(sig).finish();
  assert.equal(toHex(setDoc), toHex(setDocExpected));
});

test('decode failures: unknown indices, argument bounds, enum/bool/option tags', () => {
  assert.equal(decodeExtrinsic(Uint8Array.of(8, 26)), undefined, 'dropped call 26');
  assert.equal(decodeExtrinsic(Uint8Array.of(9, 12)), undefined, 'legacy v1 policy');
  assert.equal(decodeExtrinsic(Uint8Array.of(8)), undefined);
  assert.equal(decodeExtrinsic(new Uint8Array(0)), undefined);
  const bad: [string, Call][] = [
    ['vm id 65', { name: 'add_verification_method', args: { did, method: { ...vm, id: 'i'.repeat(65) }, ...proof } }],
    ['ka key 129', { name: 'add_key_agreement', args: { did, keyAgreement: { ...vm, publicKeyMultibase: 'k'.repeat(129) }, ...proof } }],
    ['service 6 endpoints', { name: 'update_service', args: { did, service: { ...svc, serviceEndpoint: Array(6).fill('e') }, ...proof } }],
    ['application id 65', { name: 'register_application', args: { applicationId: 'a'.repeat(65), controlDid: did, signerKeyId: 'root', signature: sig } }],
    ['control did 129', { name: 'register_application', args: { applicationId: 'a', controlDid: 'd'.repeat(129), signerKeyId: 'root', signature: sig } }],
    ['signer 97', { name: 'update_application', args: { applicationId: 'a', newControlDid: did, signerKeyId: 'k'.repeat(97), signature: sig } }],
    ['signature 129', { name: 'set_application_status', args: { applicationId: 'a', status: 0, signerKeyId: 'root', signature: new Uint8Array(129) } }],
    ['status 3', { name: 'set_application_status', args: { applicationId: 'a', status: 3, signerKeyId: 'root', signature: sig } }],
    ['domain 254', { name: 'set_application_domain', args: { applicationId: 'a', domain: 'd'.repeat(254), signerKeyId: 'root', signature: sig } }],
  ];
  for (const [name, call] of bad) assert.equal(decodeExtrinsic(encodeExtrinsic(call)), undefined, name);
  // bool tag 2 in set_application_linked_did.enabled
  const linked = encodeExtrinsic(ALL[25]![0]);
  const enabledAt = 2 + 1 + 3 + 1 + utf8(did).length;
  assert.equal(linked[enabledAt], 1);
  const badBool = linked.slice();
  badBool[enabledAt] = 2;
  assert.equal(decodeExtrinsic(badBool), undefined);
  // option tag 2 in register_with_proof_v2.alias
  const reg = encodeExtrinsic(ALL[16]![0]);
  const aliasTagAt = 2 + 1 + utf8(did).length;
  assert.equal(reg[aliasTagAt], 1);
  const badTag = reg.slice();
  badTag[aliasTagAt] = 2;
  assert.equal(decodeExtrinsic(badTag), undefined);
});
