/** Signing-key resolution and multibase decoding (ledger-rules.md §3.5), request key forms, document structure (§3.4). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { base58 } from '@scure/base';
import { toHex, utf8 } from '../../src/base/bytes.js';
import { keyPairFromSeed, verifyEd25519 } from '../../src/crypto/ed25519.js';
import {
  decodeSigningKeyMultibase,
  decodeX25519Multibase,
  multibaseEd25519,
  multibaseX25519,
  parseRootPubkey,
  resolveSigningKey,
} from '../../src/protocol/keys.js';
import { checkDocumentStructure, documentToJson, emptyDocument, type DidDocument, type Service, type VerificationMethod } from '../../src/protocol/document.js';
import { hex, vectors as V } from '../vectors/ledger-vectors.js';

const PK = hex(V.keys.seed7.public_key_hex);
const DID = 'did:platform:8DfbjXLth7APvt3qQPgtf';

test('multibase: raw and ed01 forms decode to the same key; other forms fail', () => {
  assert.deepEqual(decodeSigningKeyMultibase(V.keys.seed7.multibase_raw), PK);
  assert.deepEqual(decodeSigningKeyMultibase(V.keys.seed7.multibase_ed01), PK);
  // no `z`
  assert.equal(decodeSigningKeyMultibase(V.keys.seed7.multibase_raw.slice(1)), undefined);
  assert.equal(decodeSigningKeyMultibase('f' + V.keys.seed7.public_key_hex), undefined);
  // characters outside the alphabet
  assert.equal(decodeSigningKeyMultibase(V.keys.seed7.multibase_raw.slice(0, -1) + '0'), undefined);
  assert.equal(decodeSigningKeyMultibase(V.keys.seed7.multibase_raw + 'l'), undefined);
  // wrong lengths and wrong multicodec prefixes
  assert.equal(decodeSigningKeyMultibase('z' + base58.encode(new Uint8Array(31).fill(5))), undefined);
  assert.equal(decodeSigningKeyMultibase('z' + base58.encode(new Uint8Array(33).fill(5))), undefined);
  assert.equal(decodeSigningKeyMultibase(multibaseX25519(PK)), undefined, 'ec01 is not a signing key');
  assert.equal(decodeSigningKeyMultibase('z' + base58.encode(Uint8Array.of(0xed, 0x01, ...PK, 0))), undefined);
  assert.equal(decodeSigningKeyMultibase('z'), undefined);
  assert.equal(decodeSigningKeyMultibase(''), undefined);
  // X25519 keys use ec01
  assert.deepEqual(decodeX25519Multibase(multibaseX25519(PK)), PK);
  assert.equal(decodeX25519Multibase(multibaseEd25519(PK)), undefined);
});

test('multibase: each leading 1 is one zero byte', () => {
  const zeros = new Uint8Array(32);
  const z = 'z' + '1'.repeat(32);
  assert.equal(multibaseEd25519(zeros, false), z);
  assert.deepEqual(decodeSigningKeyMultibase(z), zeros);
  const k = new Uint8Array(32);
  k[31] = 1;
  assert.equal(multibaseEd25519(k, false), 'z' + '1'.repeat(31) + '2');
  assert.deepEqual(decodeSigningKeyMultibase('z' + '1'.repeat(31) + '2'), k);
});

test('multibase hazard: a value of exactly 32 bytes is the raw key, even if it looks like base58', () => {
  const literal = 'z' + '1'.repeat(31); // 32 characters: would be 31 zero bytes as base58
  assert.equal(utf8(literal).length, 32);
  assert.deepEqual(decodeSigningKeyMultibase(literal), utf8(literal));
  const text = 'abcdefghijklmnopqrstuvwxyz012345';
  assert.deepEqual(decodeSigningKeyMultibase(text), utf8(text));
  // 32 bytes of UTF-8 text in fewer characters counts too
  const multi = 'é'.repeat(16);
  assert.equal(utf8(multi).length, 32);
  assert.deepEqual(decodeSigningKeyMultibase(multi), utf8(multi));
  // 31 and 33 characters go the base58 way and fail
  assert.equal(decodeSigningKeyMultibase(text.slice(1)), undefined);
  assert.equal(decodeSigningKeyMultibase(text + 'a'), undefined);
  // the hazard end to end: a key whose 32 raw bytes are printable signs under the literal VM value
  const doc: DidDocument = {
    ...emptyDocument(DID),
    verificationMethod: [{ id: `${DID}#lit`, type: 't', controller: DID, publicKeyMultibase: literal }],
  };
  assert.deepEqual(resolveSigningKey(DID, PK, doc, `${DID}#lit`), utf8(literal));
});

test('parseRootPubkey: 0x hex, bare hex, both multibase forms', () => {
  const forms = [
    '0x' + V.keys.seed7.public_key_hex,
    V.keys.seed7.public_key_hex,
    V.keys.seed7.public_key_hex.toUpperCase(),
    V.keys.seed7.multibase_raw,
    V.keys.seed7.multibase_ed01,
  ];
  for (const f of forms) assert.equal(toHex(parseRootPubkey(f)!), V.keys.seed7.public_key_hex, f);
  const bad = [
    '0x' + V.keys.seed7.public_key_hex.slice(2),
    V.keys.seed7.public_key_hex + '00',
    '0x' + V.keys.seed7.public_key_hex.slice(0, 63) + 'g',
    'Z' + V.keys.seed7.multibase_raw.slice(1),
    multibaseX25519(PK),
    'abcdefghijklmnopqrstuvwxyz012345', // 32-character literal: no hazard for request forms
    '',
  ];
  for (const f of bad) assert.equal(parseRootPubkey(f), undefined, f);
});

test('resolveSigningKey (§3.5): root, first VM with id AND controller, never key agreements', () => {
  const other = keyPairFromSeed(new Uint8Array(32).fill(8));
  const vm = (id: string, controller: string, key: Uint8Array): VerificationMethod => ({
    id,
    type: 'Ed25519VerificationKey2020',
    controller,
    publicKeyMultibase: multibaseEd25519(key),
  });
  const doc: DidDocument = {
    id: DID,
    verificationMethod: [
      vm(`${DID}#a`, 'did:platform:someoneElse1111111', other.publicKey), // same id, foreign controller: skipped
      vm(`${DID}#a`, DID, PK),
      vm(`${DID}#b`, DID, other.publicKey),
    ],
    authentication: null,
    keyAgreement: [vm(`${DID}#ka`, DID, PK)],
    service: null,
  };
  const rootKey = new Uint8Array(32).fill(3);
  assert.deepEqual(resolveSigningKey(DID, rootKey, doc, 'root'), rootKey);
  assert.deepEqual(resolveSigningKey(DID, rootKey, null, 'root'), rootKey);
  assert.deepEqual(resolveSigningKey(DID, rootKey, doc, `${DID}#a`), PK);
  assert.deepEqual(resolveSigningKey(DID, rootKey, doc, `${DID}#b`), other.publicKey);
  assert.equal(resolveSigningKey(DID, rootKey, doc, `${DID}#ka`), undefined);
  assert.equal(resolveSigningKey(DID, rootKey, doc, 'Root'), undefined, '"root" is exact');
  assert.equal(resolveSigningKey(DID, rootKey, doc, '#a'), undefined);
  assert.equal(resolveSigningKey(DID, rootKey, null, `${DID}#a`), undefined);
  // a VM whose value does not decode resolves to nothing
  const broken: DidDocument = { ...doc, verificationMethod: [{ ...doc.verificationMethod[1]!, publicKeyMultibase: 'zzz' }] };
  assert.equal(resolveSigningKey(DID, rootKey, broken, `${DID}#a`), undefined);
});

test('Ed25519: signatures must be exactly 64 bytes; keys 32', () => {
  const kp = keyPairFromSeed(hex(V.keys.seed7.seed_hex));
  const msg = utf8('hello');
  const sig = kp.sign(msg);
  assert.ok(verifyEd25519(kp.publicKey, msg, sig));
  assert.equal(verifyEd25519(kp.publicKey, utf8('hellO'), sig), false);
  assert.equal(verifyEd25519(kp.publicKey, msg, Uint8Array.of(...sig, 0)), false);
  assert.equal(verifyEd25519(kp.publicKey, msg, sig.subarray(0, 63)), false);
  assert.equal(verifyEd25519(kp.publicKey.subarray(0, 31), msg, sig), false);
  const flipped = sig.slice();
  flipped[10]! ^= 1;
  assert.equal(verifyEd25519(kp.publicKey, msg, flipped), false);
  // s ≥ group order is refused even under ZIP-215
  const highS = sig.slice();
  highS.set(hex('edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010'), 32);
  assert.equal(verifyEd25519(kp.publicKey, msg, highS), false);
  assert.throws(() => keyPairFromSeed(new Uint8Array(31)), RangeError);
});

// ---- §3.4 ----

const vm = (frag: string, p: Partial<VerificationMethod> = {}): VerificationMethod => ({
  id: `${DID}#${frag}`,
  type: 'Ed25519VerificationKey2020',
  controller: DID,
  publicKeyMultibase: V.keys.seed7.multibase_raw,
  ...p,
});
const svc = (frag: string, p: Partial<Service> = {}): Service => ({
  id: `${DID}#${frag}`,
  type: 'PlatformCacheService',
  serviceEndpoint: ['https://cache.example.com'],
  authorization: null,
  priority: null,
  ...p,
});
const doc = (p: Partial<DidDocument> = {}): DidDocument => ({
  id: DID,
  verificationMethod: [vm('root')],
  authentication: [`${DID}#root`],
  keyAgreement: [vm('x1', { type: 'X25519KeyAgreementKey2020' })],
  service: [svc('cache')],
  ...p,
});

test('document structure (§3.4): valid documents', () => {
  assert.equal(checkDocumentStructure(doc(), DID), null);
  assert.equal(checkDocumentStructure(emptyDocument(DID), DID), null);
  // not checked: key types, multibase decodability, VM-vs-KA id collisions, authorization targets, URL schemes
  assert.equal(
    checkDocumentStructure(
      doc({
        verificationMethod: [vm('root', { type: 'Anything', publicKeyMultibase: 'not-multibase' })],
        keyAgreement: [vm('root')],
        service: [svc('c', { type: 'X', serviceEndpoint: ['ftp://x'], authorization: ['#nowhere'] })],
      }),
      DID,
    ),
    null,
  );
});

test('document structure (§3.4): each rule and the order between rules', () => {
  const cases: [string, Partial<DidDocument> | DidDocument, string][] = [
    ['id mismatch', { id: 'did:platform:other11111111111111' }, 'InvalidDocument'],
    ['empty vm id', { verificationMethod: [vm('root', { id: '' })], authentication: null }, 'InvalidDocument'],
    ['foreign controller', { verificationMethod: [vm('root', { controller: 'did:x:1111111111111111' })] }, 'InvalidDocument'],
    ['empty type', { verificationMethod: [vm('root', { type: '' })] }, 'InvalidDocument'],
    ['empty key', { verificationMethod: [vm('root', { publicKeyMultibase: '' })] }, 'InvalidDocument'],
    ['duplicate vm', { verificationMethod: [vm('root'), vm('root')] }, 'VerificationMethodAlreadyExists'],
    ['auth names no vm', { authentication: [`${DID}#nope`] }, 'VerificationMethodNotFound'],
    ['auth repeated', { authentication: [`${DID}#root`, `${DID}#root`] }, 'AuthenticationAlreadyExists'],
    ['invalid ka', { keyAgreement: [vm('x1', { controller: '' })] }, 'InvalidDocument'],
    ['duplicate ka', { keyAgreement: [vm('x1'), vm('x1')] }, 'KeyAgreementAlreadyExists'],
    ['service without endpoint', { service: [svc('c', { serviceEndpoint: [] })] }, 'InvalidDocument'],
    ['service empty type', { service: [svc('c', { type: '' })] }, 'InvalidDocument'],
    ['service empty id', { service: [svc('c', { id: '' })] }, 'InvalidDocument'],
    ['empty authorization entry', { service: [svc('c', { authorization: [''] })] }, 'InvalidDocument'],
    ['duplicate service', { service: [svc('c'), svc('c')] }, 'ServiceAlreadyExists'],
    // order: the id check precedes everything
    ['id first', { id: 'did:x:1', verificationMethod: [vm('root'), vm('root')] }, 'InvalidDocument'],
    // a VM's duplicate is reported before a later invalid VM
    ['dup before later invalid', { verificationMethod: [vm('a'), vm('b', { type: '' }), vm('a')], authentication: null }, 'VerificationMethodAlreadyExists'],
    // an invalid VM is reported before a later duplicate pair
    ['invalid before later dup', { verificationMethod: [vm('a', { type: '' }), vm('b'), vm('b')], authentication: null }, 'InvalidDocument'],
    // VM rules precede authentication, authentication precedes key agreements, those precede services
    ['vm before auth', { verificationMethod: [vm('root'), vm('root')], authentication: ['#nope'] }, 'VerificationMethodAlreadyExists'],
    ['auth before ka', { authentication: ['#nope'], keyAgreement: [vm('x', { type: '' })] }, 'VerificationMethodNotFound'],
    ['ka before service', { keyAgreement: [vm('x'), vm('x')], service: [svc('c', { type: '' })] }, 'KeyAgreementAlreadyExists'],
  ];
  for (const [name, p, err] of cases) assert.equal(checkDocumentStructure(doc(p), DID), err, name);
});

test('document JSON rendering: all five keys, [] for None, authorization/priority only when Some', () => {
  const j = documentToJson(emptyDocument(DID));
  assert.deepEqual(j, { id: DID, verificationMethod: [], authentication: [], keyAgreement: [], service: [] });
  const withSvc = documentToJson(doc({ service: [svc('c', { authorization: [], priority: 0 })] }));
  assert.deepEqual((withSvc.service as unknown[])[0], {
    id: `${DID}#c`,
    type: 'PlatformCacheService',
    serviceEndpoint: ['https://cache.example.com'],
    authorization: [],
    priority: 0,
  });
  const bare = documentToJson(doc({ service: [svc('c')] }));
  assert.deepEqual(Object.keys((bare.service as Record<string, unknown>[])[0]!), ['id', 'type', 'serviceEndpoint']);
});
