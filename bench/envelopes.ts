/** Envelope texts (http-api.md §10.1) of an exact size, and signed retrieval-proof headers (§11.4), for the bench. */
import { randomUUID } from 'node:crypto';
import { toBase64, utf8 } from '../src/base/bytes.js';
import type { Ed25519KeyPair } from '../src/crypto/ed25519.js';
import { makeProfile, type Profile } from '../src/protocol/profile.js';
import { retrievalProofText, type ProofOperation } from '../src/protocol/retrieval-proof.js';

/** An envelope text whose `message_id` sits at `idOffset` (36 bytes) so it can be rewritten in place. */
export interface EnvelopeTemplate {
  buf: Buffer;
  idOffset: number;
}

/**
 * An envelope to `to` of exactly `bodyBytes` bytes: 24 h TTL, tag `bench`, a `ciphertext_b64` of up to
 * `maxCiphertextBytes` decoded bytes (the unchunked limit is 16 MiB), and — when the body must be larger than
 * that — an opaque `pad` member in the payload (payload members other than `ciphertext_b64` are not interpreted).
 */
export function envelopeTemplate(to: string, bodyBytes: number, maxCiphertextBytes = 16 * 1024 * 1024): EnvelopeTemplate {
  const p = to.split(':')[1] ?? 'platform';
  const head = '{"message_id":"';
  const mid =
    `${randomUUID()}","to":${JSON.stringify(to)},"tag":"bench","timestamp":"${new Date().toISOString()}","ttl":"24h",` +
    `"payload":{"profile":"${p}:cbor-chunk:x25519-hkdf-sha256-chacha20poly1305:v1","ciphertext_b64":"`;
  const fixed = Buffer.byteLength(head + mid) + '"}}'.length;
  let room = bodyBytes - fixed;
  if (room < 4) throw new Error(`an envelope cannot be as small as ${bodyBytes} bytes`);
  const maxB64 = Math.floor(maxCiphertextBytes / 3) * 4;
  const b64Len = Math.min(room - (room % 4), maxB64);
  room -= b64Len;
  let padMember = '';
  if (room >= 10) {
    padMember = `,"pad":"${'x'.repeat(room - 9)}"`;
    room = 0;
  }
  // JSON whitespace before the closing brace makes up the last few bytes
  const text = `${head}${mid}${'A'.repeat(b64Len)}"${padMember}}${' '.repeat(room)}}`;
  const buf = Buffer.from(text, 'utf8');
  if (buf.length !== bodyBytes) throw new Error(`envelope template is ${buf.length} bytes, wanted ${bodyBytes}`);
  return { buf, idOffset: head.length };
}

/** A copy of the template with a fresh `message_id`; returns the text and the id. */
export function freshEnvelope(t: EnvelopeTemplate): { body: Buffer; messageId: string } {
  const messageId = randomUUID();
  const body = Buffer.from(t.buf);
  body.write(messageId, t.idOffset, 'latin1');
  return { body, messageId };
}

/** A recipient able to sign retrieval proofs. */
export interface ProofSigner {
  did: string;
  key: Ed25519KeyPair;
  keyId: string;
  serviceId: string;
}

const profiles = new Map<string, Profile>();
const profileOf = (name: string): Profile => {
  let p = profiles.get(name);
  if (p === undefined) profiles.set(name, (p = makeProfile(name)));
  return p;
};

const isoSeconds = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/** The six retrieval-proof headers for `operation` on `subject`, signed now with a fresh nonce. */
export function proofHeaders(profileName: string, r: ProofSigner, endpoint: string, operation: ProofOperation, subject: string): Record<string, string> {
  const timestamp = isoSeconds(Date.now());
  const nonce = randomUUID();
  const text = retrievalProofText(profileOf(profileName), {
    operation,
    did: r.did,
    deviceId: '',
    serviceId: r.serviceId,
    cacheEndpoint: endpoint,
    keyId: r.keyId,
    timestamp,
    nonce,
    subject,
  });
  return {
    'X-Service-Id': r.serviceId,
    'X-Cache-Endpoint': endpoint,
    'X-Key-Id': r.keyId,
    'X-Timestamp': timestamp,
    'X-Nonce': nonce,
    'X-Signature': toBase64(r.key.sign(utf8(text))),
  };
}
