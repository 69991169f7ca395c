/**
 * ledger-rules.md §12 test vectors (V1, V2, V3, V5, V6, V7) recomputed with the codecs.
 * Every expected byte string comes from test/vectors/ledger-vectors.json.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toBase64, toHex, to0x, utf8 } from '../../src/base/bytes.js';
import { keyPairFromSeed, verifyEd25519 } from '../../src/crypto/ed25519.js';
import { ScaleWriter } from '../../src/codec/scale.js';
import { blake2_256 } from '../../src/crypto/hash.js';
import { normalizeAlias } from '../../src/protocol/alias.js';
import { generateDid, isDid } from '../../src/protocol/did.js';
import { decodeDocument, documentHash, documentToJson, encodeDocument, type DidDocument } from '../../src/protocol/document.js';
import { decodeSigningKeyMultibase, multibaseEd25519, parseRootPubkey, resolveSigningKey } from '../../src/protocol/keys.js';
import { PLATFORM, makeProfile } from '../../src/protocol/profile.js';
import { decodeAliasPayload, encodeAliasPayload, type AliasPayload } from '../../src/protocol/payloads/alias.js';
import { decodeControlPayload, encodeControlPayload, type ControlPayload } from '../../src/protocol/payloads/control.js';
import { decodeDocumentPatchPayload, encodeDocumentPatchPayload, type DocumentPatchPayload } from '../../src/protocol/payloads/document-patch.js';
import { documentReplacementSigningBytes, documentReplacementToken } from '../../src/protocol/payloads/document-replacement.js';
import { parseV2Token, registrationSigningBytes, registrationToken } from '../../src/protocol/payloads/registration.js';
import { encodeExtrinsic, decodeExtrinsic, txHashOf } from '../../src/ledger/extrinsic.js';
import { blockHash, encodeGenesisConfig, encodeHeader, genesisHeader, type GenesisConfig } from '../../src/ledger/block.js';
import { hex, vectors as V } from '../vectors/ledger-vectors.js';

const seed7 = keyPairFromSeed(hex(V.keys.seed7.seed_hex));

test('seed-7 key: public key and both multibase forms', () => {
  assert.equal(toHex(seed7.publicKey), V.keys.seed7.public_key_hex);
  assert.equal(multibaseEd25519(seed7.publicKey, false), V.keys.seed7.multibase_raw);
  assert.equal(multibaseEd25519(seed7.publicKey, true), V.keys.seed7.multibase_ed01);
  assert.equal(multibaseEd25519(seed7.publicKey), V.keys.seed7.multibase_ed01, 'default form carries ed01');
  // both forms resolve to the same key, for VM values and for request root keys
  for (const form of [V.keys.seed7.multibase_raw, V.keys.seed7.multibase_ed01]) {
    assert.equal(toHex(decodeSigningKeyMultibase(form)!), V.keys.seed7.public_key_hex, form);
    assert.equal(toHex(parseRootPubkey(form)!), V.keys.seed7.public_key_hex, form);
  }
  assert.equal(toHex(new ScaleWriter().u64(BigInt(V.valid_until.ms)).finish()), V.valid_until.u64_le_hex);
});

test('V1: alias Add payload, signature, Base64, tx_hash', () => {
  const v = V.V1;
  const p: AliasPayload = {
    did: v.did,
    action: v.action,
    alias: v.alias,
    oldAlias: null,
    newAlias: null,
    nonce: BigInt(v.nonce),
    validUntil: BigInt(v.valid_until),
    signerKeyId: v.signer_key_id,
  };
  const bytes = encodeAliasPayload(p);
  assert.equal(toHex(bytes), v.payload_hex);
  assert.equal(bytes[0], 0x74, 'compact(29) = 74');
  assert.deepEqual(decodeAliasPayload(hex(v.payload_hex)), p);
  const sig = seed7.sign(bytes);
  assert.equal(toHex(sig), v.signature_hex);
  assert.equal(toBase64(sig), v.signature_b64);
  assert.ok(verifyEd25519(seed7.publicKey, bytes, sig));
  const ext = encodeExtrinsic({
    name: 'add_alias',
    args: { did: v.did, alias: v.alias, signedPayload: bytes, signature: sig, signerKeyId: v.signer_key_id },
  });
  assert.deepEqual([...ext.subarray(0, 2)], [8, 11], 'DidRegistry(8).add_alias(11)');
  assert.equal(to0x(txHashOf(ext)), v.tx_hash);
  const back = decodeExtrinsic(ext);
  assert.equal(back?.name, 'add_alias');
  assert.deepEqual(encodeExtrinsic(back!), ext);
});

test('V1 cross-check: the openpayload DID gives the deployed encoding', () => {
  const v = V.V1;
  const bytes = encodeAliasPayload({
    did: v.openpayload_did,
    action: 'Add',
    alias: v.alias,
    oldAlias: null,
    newAlias: null,
    nonce: 0n,
    validUntil: BigInt(v.valid_until),
    signerKeyId: 'root',
  });
  assert.equal(toHex(bytes), v.openpayload_payload_hex);
  assert.equal(bytes[0], 0x80, 'compact(32) = 80');
});

test('V2: AddService document payload and signature', () => {
  const v = V.V2;
  const p: DocumentPatchPayload = {
    did: v.did,
    action: v.action,
    verificationMethod: null,
    keyAgreement: null,
    service: { ...v.service },
    id: null,
    nonce: BigInt(v.nonce),
    validUntil: BigInt(v.valid_until),
    signerKeyId: v.signer_key_id,
  };
  const bytes = encodeDocumentPatchPayload(p);
  assert.equal(bytes.length, 212);
  assert.equal(toHex(bytes), v.payload_hex);
  assert.deepEqual(decodeDocumentPatchPayload(bytes), p);
  const sig = seed7.sign(bytes);
  assert.equal(toHex(sig), v.signature_hex);
  // the signer is a VM holding the seed-7 key: resolution gives that key
  const doc: DidDocument = {
    id: v.did,
    verificationMethod: [{ id: v.signer_key_id, type: 'Ed25519VerificationKey2020', controller: v.did, publicKeyMultibase: V.keys.seed7.multibase_raw }],
    authentication: null,
    keyAgreement: [],
    service: null,
  };
  const key = resolveSigningKey(v.did, new Uint8Array(32), doc, v.signer_key_id);
  assert.equal(toHex(key!), V.keys.seed7.public_key_hex);
  assert.ok(verifyEd25519(key!, bytes, hex(v.signature_hex)));
});

test('V3: DeleteDid and AddDevice control payloads, DeleteDid signature', () => {
  const v = V.V3;
  const del: ControlPayload = {
    did: v.did,
    action: { kind: 'DeleteDid' },
    nonce: BigInt(v.delete.nonce),
    validUntil: BigInt(v.delete.valid_until),
    signerKeyId: v.delete.signer_key_id,
  };
  const delBytes = encodeControlPayload(del);
  assert.equal(toHex(delBytes), v.delete.payload_hex);
  assert.deepEqual(decodeControlPayload(delBytes), del);
  assert.equal(toHex(seed7.sign(delBytes)), v.delete.signature_hex);
  const add: ControlPayload = {
    did: v.did,
    action: { kind: 'AddDevice', deviceId: v.add_device.device_id },
    nonce: BigInt(v.add_device.nonce),
    validUntil: BigInt(v.add_device.valid_until),
    signerKeyId: v.add_device.signer_key_id,
  };
  assert.equal(toHex(encodeControlPayload(add)), v.add_device.payload_hex);
  assert.deepEqual(decodeControlPayload(hex(v.add_device.payload_hex)), add);
});

/** The V5 document, converted by the §3.3 JSON rules (absent priority → None; present authorization → Some). */
function v5Document(): DidDocument {
  const j = V.V5.document_json as {
    id: string;
    verificationMethod: { id: string; type: string; controller: string; publicKeyMultibase: string }[];
    authentication: string[];
    keyAgreement: unknown[];
    service: { id: string; type: string; serviceEndpoint: string[]; authorization: string[] }[];
  };
  assert.equal(j.keyAgreement.length, 0);
  return {
    id: j.id,
    verificationMethod: j.verificationMethod.map((m) => ({ ...m })),
    authentication: [...j.authentication],
    keyAgreement: [],
    service: j.service.map((s) => ({
      id: s.id,
      type: s.type,
      serviceEndpoint: [...s.serviceEndpoint],
      authorization: [...s.authorization],
      priority: null,
    })),
  };
}

test('V5: DID from 16 bytes, alias normalisation, doc_blob, document_hash, JSON round trip', () => {
  const v = V.V5;
  assert.equal(generateDid(PLATFORM, hex(v.did_address_bytes_hex)), v.did);
  assert.equal(utf8(v.did).length, 34);
  assert.ok(isDid(v.did));
  assert.deepEqual(normalizeAlias(v.alias_raw), { ok: true, alias: v.alias });
  const doc = v5Document();
  const blob = encodeDocument(doc);
  assert.equal(blob.length, 361);
  assert.equal(toHex(blob), v.doc_blob_hex);
  assert.equal(toHex(documentHash(doc)), v.document_hash_hex);
  assert.equal(toHex(blake2_256(hex(v.doc_blob_hex))), v.document_hash_hex);
  const decoded = decodeDocument(hex(v.doc_blob_hex));
  assert.deepEqual(decoded, doc);
  assert.deepEqual(documentToJson(decoded), v.document_json);
});

test('V5: registration v2 signed bytes, token, signature', () => {
  const v = V.V5;
  const expiryMs = BigInt(v.expiry_ms);
  const msg = registrationSigningBytes(PLATFORM, {
    did: v.did,
    rootPubkey: seed7.publicKey,
    alias: v.alias,
    documentHash: hex(v.document_hash_hex),
    expiryMs,
  });
  assert.equal(toHex(msg), v.signed_bytes_hex);
  assert.equal(registrationToken(expiryMs), v.token);
  assert.deepEqual(parseV2Token(v.token), { nonce: 0n, ms: expiryMs });
  const sig = seed7.sign(msg);
  assert.equal(toHex(sig), v.signature_hex);
  assert.equal(toBase64(sig), v.signature_b64);
  // the prefix is the profile's; another profile signs different bytes
  const other = registrationSigningBytes(makeProfile('openpayload'), {
    did: v.did,
    rootPubkey: seed7.publicKey,
    alias: v.alias,
    documentHash: hex(v.document_hash_hex),
    expiryMs,
  });
  assert.ok(toHex(other).startsWith(toHex(utf8('openpayload:register:v2|'))));
  assert.equal(toHex(other).slice(2 * 'openpayload:register:v2|'.length), toHex(msg).slice(2 * 'platform:register:v2|'.length));
});

test('V6: document replacement v2 signed bytes, token, signature', () => {
  const v = V.V6;
  const nonce = BigInt(v.document_nonce);
  const validUntil = BigInt(v.valid_until);
  const msg = documentReplacementSigningBytes(PLATFORM, {
    did: v.did,
    documentHash: documentHash(v5Document()),
    documentNonce: nonce,
    validUntil,
    signerKeyId: v.signer_key_id,
  });
  assert.equal(toHex(msg), v.signed_bytes_hex);
  assert.equal(documentReplacementToken(nonce, validUntil), v.token);
  assert.deepEqual(parseV2Token(v.token), { nonce, ms: validUntil });
  assert.equal(toHex(seed7.sign(msg)), v.signature_hex);
});

test('V7: genesis config, block-0 header, genesis hash', () => {
  const v = V.V7;
  const attestor = keyPairFromSeed(hex(V.keys.seed9.seed_hex));
  assert.equal(toHex(attestor.publicKey), V.keys.seed9.public_key_hex);
  assert.deepEqual(v.genesis.persona_attestors_hex, [V.keys.seed9.public_key_hex]);
  const g: GenesisConfig = {
    profile: v.genesis.profile,
    chainId: v.genesis.chain_id,
    genesisTimeMs: Number(v.genesis.genesis_time_ms),
    personaAttestors: [attestor.publicKey],
  };
  assert.equal(toHex(encodeGenesisConfig(g)), v.genesis_config_hex);
  const h = genesisHeader(g);
  assert.equal(toHex(encodeHeader(h)), v.block0_header_hex);
  assert.equal(toHex(h.extrinsicsRoot), toHex(blake2_256(hex(v.genesis_config_hex))));
  assert.equal(toHex(h.resultsRoot), toHex(blake2_256(Uint8Array.of(0))));
  assert.equal(to0x(blockHash(h)), v.genesis_hash);
});

test('parseV2Token rejects non-canonical and out-of-range tokens', () => {
  for (const t of ['v2:00:1', 'v2:0:01', 'v1:0:1', 'v2:0', 'v2:-1:5', 'v2:0:18446744073709551616', ' v2:0:1']) {
    assert.equal(parseV2Token(t), undefined, t);
  }
  assert.deepEqual(parseV2Token('v2:0:18446744073709551615'), { nonce: 0n, ms: 18446744073709551615n });
});
