/** The file-transfer profile (http-api.md §10.9): encryption, CBOR records, chunk planning and reassembly. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseBase64, parseHex, toBase64, toHex, utf8 } from '../../src/base/bytes.js';
import { sha256 } from '../../src/crypto/hash.js';
import { x25519KeyPairFromSeed } from '../../src/crypto/x25519.js';
import { assembleFile, openFileEnvelope } from '../../src/protocol/file-assembly.js';
import { buildFileEnvelope, planFileTransfer, type TransferLimits } from '../../src/protocol/file-envelopes.js';
import { decodeFileRecord, encodeFileRecord, type FileRecord } from '../../src/protocol/file-record.js';
import { openPayload, payloadAad, sealPayload, type AadFields } from '../../src/protocol/payload-crypto.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { TransferError } from '../../src/protocol/transfer-error.js';

const V = JSON.parse(readFileSync(new URL('../vectors/file-transfer.json', import.meta.url), 'utf8')) as Record<string, string | number>;
const hex = (k: string) => parseHex(V[k] as string)!;
const recipient = x25519KeyPairFromSeed(hex('recipient_seed_hex'));
const ephemeral = x25519KeyPairFromSeed(hex('ephemeral_seed_hex'));
const aad: AadFields = { messageId: V.message_id as string, to: V.to as string, groupId: V.message_group_id as string, sequence: 1, total: 3 };
const vectorRecord: FileRecord = {
  name: 'hello.txt',
  mediaType: 'text/plain',
  sizeBytes: hex('file_hex').length,
  sha256: sha256(hex('file_hex')),
  groupId: aad.groupId,
  sequence: 1,
  total: 3,
  data: hex('data_hex'),
};
const NETWORK: TransferLimits = { maxHttpEnvelopeBytes: 26_214_400, maxUnchunkedMessageBytes: 16_777_216, maxChunkBytes: 2_097_152 };

function rejects(fn: () => unknown, code: string): void {
  assert.throws(fn, (e: unknown) => e instanceof TransferError && e.code === code);
}

describe('payload encryption profile', () => {
  it('matches the independent reference vector byte for byte', () => {
    assert.equal(toHex(recipient.publicKey), V.recipient_public_hex);
    assert.equal(new TextDecoder().decode(payloadAad(PLATFORM, aad)), V.aad);
    const cbor = encodeFileRecord(PLATFORM, vectorRecord);
    assert.equal(toHex(cbor), V.record_cbor_hex);
    const sealed = sealPayload(PLATFORM, {
      recipientKeyId: `${aad.to}#x25519-1`,
      recipientPublicKey: recipient.publicKey,
      plaintext: cbor,
      aad,
      ephemeral,
      nonce: hex('nonce_hex'),
    });
    assert.equal(sealed.profile, PLATFORM.controlPayloadProfile);
    assert.equal(toHex(parseBase64(sealed.ciphertext_b64)!), V.ciphertext_hex);
    assert.equal(toHex(parseBase64(sealed.ephemeral_x25519_b64)!), V.ephemeral_public_hex);
    assert.deepEqual(openPayload(PLATFORM, sealed, aad, recipient.privateKey), cbor);
  });

  it('an unchunked payload binds `profile|message_id|to||0|1`', () => {
    const f: AadFields = { messageId: 'm', to: 'did:platform:x', groupId: '', sequence: 0, total: 1 };
    assert.equal(new TextDecoder().decode(payloadAad(PLATFORM, f)), `${PLATFORM.controlPayloadProfile}|m|did:platform:x||0|1`);
  });

  it('refuses every altered byte, a wrong key and altered envelope fields', () => {
    const cbor = encodeFileRecord(PLATFORM, vectorRecord);
    const sealed = sealPayload(PLATFORM, { recipientKeyId: 'k', recipientPublicKey: recipient.publicKey, plaintext: cbor, aad });
    const ct = parseBase64(sealed.ciphertext_b64)!;
    for (const i of [0, Math.floor(ct.length / 2), ct.length - 1]) {
      const bad = ct.slice();
      bad[i]! ^= 0x01;
      rejects(() => openPayload(PLATFORM, { ...sealed, ciphertext_b64: toBase64(bad) }, aad, recipient.privateKey), 'decryption_failed');
    }
    rejects(() => openPayload(PLATFORM, sealed, aad, ephemeral.privateKey), 'decryption_failed');
    for (const other of [
      { ...aad, messageId: 'x' },
      { ...aad, to: 'did:platform:other' },
      { ...aad, sequence: 2 },
      { ...aad, total: 4 },
      { ...aad, groupId: '' },
    ]) {
      rejects(() => openPayload(PLATFORM, sealed, other, recipient.privateKey), 'decryption_failed');
    }
    rejects(() => openPayload(PLATFORM, { ...sealed, nonce_b64: 'AAAA' }, aad, recipient.privateKey), 'invalid_encrypted_payload');
    rejects(() => openPayload(PLATFORM, { ...sealed, profile: 'other:v1' }, aad, recipient.privateKey), 'unsupported_payload_profile');
    rejects(() => openPayload(PLATFORM, sealed, aad, null), 'decryption_key_required');
  });

  it('refuses to encrypt to a low-order public key', () => {
    rejects(() => sealPayload(PLATFORM, { recipientKeyId: 'k', recipientPublicKey: new Uint8Array(32), plaintext: utf8('x'), aad }), 'invalid_recipient_key');
  });
});

describe('file record (CBOR)', () => {
  it('round-trips and sorts keys length-first', () => {
    const cbor = encodeFileRecord(PLATFORM, vectorRecord);
    assert.deepEqual(decodeFileRecord(PLATFORM, cbor), vectorRecord);
    assert.equal(cbor[0], 0xa9);
  });

  it('refuses other formats, wrong types, duplicate keys and trailing bytes', () => {
    const cbor = encodeFileRecord(PLATFORM, vectorRecord);
    rejects(() => decodeFileRecord(PLATFORM, cbor.slice(0, -1)), 'invalid_file_record');
    rejects(() => decodeFileRecord(PLATFORM, Uint8Array.of(...cbor, 0)), 'invalid_file_record');
    rejects(() => decodeFileRecord(PLATFORM, encodeFileRecord({ ...PLATFORM, controlRecordFormat: 'x:v1' }, vectorRecord)), 'invalid_file_record');
    rejects(() => decodeFileRecord(PLATFORM, encodeFileRecord(PLATFORM, { ...vectorRecord, sha256: new Uint8Array(31) })), 'invalid_file_record');
    rejects(() => decodeFileRecord(PLATFORM, encodeFileRecord(PLATFORM, { ...vectorRecord, sequence: 3 })), 'invalid_file_record');
    // a map of one key repeated twice: {"a": 0, "a": 0}
    rejects(() => decodeFileRecord(PLATFORM, Uint8Array.of(0xa2, 0x61, 0x61, 0x00, 0x61, 0x61, 0x00)), 'invalid_file_record');
  });
});

describe('chunk planning', () => {
  it('keeps a file in one envelope up to the unchunked limit, then uses 1 MiB parts', () => {
    assert.deepEqual(planFileTransfer(0, NETWORK), { chunked: false, partBytes: 1, total: 1 });
    assert.deepEqual(planFileTransfer(16_777_216 - 4096, NETWORK), { chunked: false, partBytes: 16_777_216 - 4096, total: 1 });
    assert.deepEqual(planFileTransfer(20 * 1_048_576, NETWORK), { chunked: true, partBytes: 1_048_576, total: 20 });
  });

  it('follows smaller effective limits and refuses impossible ones', () => {
    const small = { maxHttpEnvelopeBytes: 100_000, maxUnchunkedMessageBytes: 20_000, maxChunkBytes: 10_000 };
    assert.deepEqual(planFileTransfer(50_000, small), { chunked: true, partBytes: 5904, total: 9 });
    rejects(() => planFileTransfer(10, { ...small, maxChunkBytes: 4000 }), 'limits_too_small');
    rejects(() => planFileTransfer(65_536 * 5904, small), 'file_too_large');
  });
});

describe('file envelopes', () => {
  const limits = { maxHttpEnvelopeBytes: 200_000, maxUnchunkedMessageBytes: 30_000, maxChunkBytes: 12_000 };
  const file = new Uint8Array(100_000).map((_, i) => (i * 31) & 0xff);
  const to = 'did:platform:8DfbjXLth7APvt3qQPgtf';
  const build = (plaintext: boolean) => {
    const plan = planFileTransfer(file.length, limits, { plaintext });
    return Array.from({ length: plan.total }, (_, seq) =>
      buildFileEnvelope(
        PLATFORM,
        {
          to,
          messageId: `00000000-0000-4000-8000-${String(seq).padStart(12, '0')}`,
          timestamp: '2026-07-16T12:00:00.000Z',
          ttl: '1h',
          recipient: plaintext ? null : { keyId: `${to}#x25519-1`, publicKey: recipient.publicKey },
          record: {
            name: 'f.bin',
            mediaType: 'application/octet-stream',
            sizeBytes: file.length,
            sha256: sha256(file),
            groupId: '11111111-1111-4111-8111-111111111111',
            sequence: seq,
            total: plan.total,
            data: file.subarray(seq * plan.partBytes, (seq + 1) * plan.partBytes),
          },
        },
        limits,
      ),
    );
  };

  it('encrypted parts stay within the limits and reassemble in any order', () => {
    const built = build(false);
    assert.equal(built.length, 13);
    for (const b of built) assert.ok(b.payloadBytes <= limits.maxChunkBytes && b.body.length <= limits.maxHttpEnvelopeBytes);
    assert.equal(built[0]!.envelope.delivery_hint, 'chunked');
    const records = built.reverse().map((b) => openFileEnvelope(PLATFORM, JSON.parse(b.body) as Record<string, unknown>, recipient.privateKey));
    const out = assembleFile(records);
    assert.deepEqual(out.data, file);
    assert.equal(out.sha256Hex, toHex(sha256(file)));
  });

  it('plaintext parts carry cbor_b64 and decode without a key', () => {
    const built = build(true);
    assert.ok('cbor_b64' in (built[0]!.envelope.payload as object));
    assert.deepEqual(assembleFile(built.map((b) => openFileEnvelope(PLATFORM, b.envelope, null))).data, file);
  });

  it('refuses a part moved to another position, a missing part and a corrupted file', () => {
    const built = build(false).map((b) => b.envelope);
    const moved = { ...built[1]!, sequence_number: 2 };
    rejects(() => openFileEnvelope(PLATFORM, moved, recipient.privateKey), 'decryption_failed');
    const records = built.map((e) => openFileEnvelope(PLATFORM, e, recipient.privateKey));
    rejects(() => assembleFile(records.slice(1)), 'incomplete_chunk_set');
    rejects(() => assembleFile([...records.slice(0, -1), records[0]!]), 'incomplete_chunk_set');
    const flipped = records.map((r, i) => (i === 3 ? { ...r, data: r.data.map((x, j) => (j === 0 ? x ^ 1 : x)) } : r));
    rejects(() => assembleFile(flipped), 'file_integrity_mismatch');
    rejects(() => assembleFile(records.map((r, i) => (i === 2 ? { ...r, name: 'other' } : r))), 'inconsistent_chunk_set');
  });
});
