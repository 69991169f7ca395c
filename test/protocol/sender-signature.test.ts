/** The envelope sender signature (http-api.md §10.2) against the published vector of §13.1, byte for byte. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseHex, toBase64, toHex } from '../../src/base/bytes.js';
import { DdnError } from '../../src/base/errors.js';
import { canonicalJson } from '../../src/codec/canonical-json.js';
import { keyPairFromSeed } from '../../src/crypto/ed25519.js';
import { sha256 } from '../../src/crypto/hash.js';
import type { DidDocument } from '../../src/protocol/document.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { parseEnvelope } from '../../src/protocol/envelope.js';
import { senderSigningBytes, verifySenderSignature } from '../../src/protocol/sender-signature.js';

interface Vector {
  seed_hex: string;
  public_key_hex: string;
  did: string;
  sender_key_id: string;
  envelope: Record<string, unknown> & { payload: Record<string, unknown> };
  canonical_payload_json: string;
  payload_sha256_hex: string;
  signed_bytes_hex: string;
  sender_signature: string;
}

const V = JSON.parse(readFileSync(new URL('../vectors/sender-signature.json', import.meta.url), 'utf8')) as Vector;
const key = keyPairFromSeed(parseHex(V.seed_hex)!);
const document: DidDocument = {
  id: V.did,
  verificationMethod: [
    { id: V.sender_key_id, type: 'Ed25519VerificationKey2020', controller: V.did, publicKeyMultibase: 'zGmaDrppBC7P5ARKV8g3djiwP89vz1jLK23V2GBjuAEGB' },
  ],
  authentication: [V.sender_key_id],
  keyAgreement: [],
  service: null,
};
const record = { deactivated: false, rootPubkey: key.publicKey, document };
const signature = Buffer.from(V.sender_signature, 'base64');
const signed = { ...V.envelope, sender: V.did, sender_key_id: V.sender_key_id, sender_signature: V.sender_signature };
const refusedFor = (reason: string) => (e: unknown) => e instanceof DdnError && e.code === 'invalid_sender_signature' && e.details?.reason === reason;

describe('sender signature vector (§13.1)', () => {
  it('has the published key, canonical payload, payload hash, signed bytes and signature', () => {
    assert.equal(toHex(key.publicKey), V.public_key_hex);
    assert.equal(canonicalJson(V.envelope.payload), V.canonical_payload_json);
    assert.equal(toHex(sha256(V.canonical_payload_json)), V.payload_sha256_hex);
    const bytes = senderSigningBytes(PLATFORM, V.envelope);
    assert.equal(toHex(bytes), V.signed_bytes_hex);
    assert.equal(toBase64(key.sign(bytes)), V.sender_signature, 'Ed25519 is deterministic: the same signature');
    // the sender fields themselves are not signed
    assert.equal(toHex(senderSigningBytes(PLATFORM, signed)), V.signed_bytes_hex);
  });

  it('is verified by the Relay and Cache check, by the root key or the #root method', () => {
    verifySenderSignature(PLATFORM, signed, { did: V.did, keyId: V.sender_key_id, signature }, record);
    verifySenderSignature(PLATFORM, signed, { did: V.did, keyId: 'root', signature }, record);
  });

  it('covers exactly the fields of §10.2: ttl, delivery_hint, context and header fields may change', () => {
    const verify = (fields: Record<string, unknown>) => verifySenderSignature(PLATFORM, fields, { did: V.did, keyId: V.sender_key_id, signature }, record);
    for (const over of [
      { ttl: '2h' },
      { delivery_hint: 'standard' },
      { context: { any: 1 } },
      { encrypted_header: 'AA==', header_nonce: 'AA==', header_key_id: 'k', schema_version: '1' },
      { payload: Object.fromEntries(Object.entries(V.envelope.payload).reverse()) }, // key order is not signed
    ]) {
      verify({ ...signed, ...over });
    }
    for (const over of [
      { message_id: '6f1c2b9e-3d4a-4e5f-8a7b-1c2d3e4f5a6c' },
      { to: `${V.did}@acme` },
      { tag: 'receipt' },
      { tag: undefined },
      { application_id: 'app.x' },
      { timestamp: '2026-07-16T12:00:01Z' },
      { payload: { ...V.envelope.payload, ciphertext_b64: '3q2+7A==' } },
      { message_group_id: '6f1c2b9e-3d4a-4e5f-8a7b-1c2d3e4f5a6b', sequence_number: 0, total_chunks: 1 },
    ]) {
      assert.throws(() => verify({ ...signed, ...over }), refusedFor('bad_signature'), JSON.stringify(over));
    }
    assert.throws(() => verifySenderSignature(PLATFORM, signed, { did: V.did, keyId: `${V.did}#other`, signature }, record), refusedFor('key_not_found'));
    assert.throws(() => verifySenderSignature(PLATFORM, signed, { did: V.did, keyId: 'root', signature }, null), refusedFor('sender_not_found'));
    assert.throws(
      () => verifySenderSignature(PLATFORM, signed, { did: V.did, keyId: 'root', signature }, { ...record, deactivated: true }),
      refusedFor('sender_not_found'),
    );
  });

  it('a malformed signature: 403 bad_signature on every profile but openpayload (400 invalid_envelope there)', () => {
    const opts = { nowMs: Date.parse('2026-07-16T12:00:00Z'), clockSkewSeconds: 300, allowPlaintext: true, allowProvenance: false };
    for (const bad of ['AAAA', 'not base64!', toBase64(new Uint8Array(63))]) {
      const body = { ...signed, sender_signature: bad };
      assert.throws(
        () => parseEnvelope(body, opts),
        (e: unknown) => e instanceof DdnError && e.code === 'invalid_envelope' && e.status === 400,
      );
      const env = parseEnvelope(body, { ...opts, malformedSenderSignatureIs403: true });
      const sender = env.sender;
      assert.ok(sender);
      assert.throws(() => verifySenderSignature(PLATFORM, env.fields, sender, record), refusedFor('bad_signature'));
      assert.equal(new DdnError('invalid_sender_signature').status, 403);
    }
  });
});
