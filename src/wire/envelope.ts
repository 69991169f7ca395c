/**
 * The DDN envelope (http-api.md §10.1) as a TypeBox schema: the body of `POST /relay[/{recipientDid}]` and
 * `POST /cache/store`, and the `envelope` of Cache retrieval items. Documentation only: the envelope parser
 * (closed field set, per-field codes) checks it; the schema forbids other members as the parser does.
 */
import { Type, type Static } from 'typebox';

const opt = (description: string) => Type.Optional(Type.String({ description }));

export const EnvelopeSchema = Type.Object(
  {
    message_id: Type.String({ description: 'UUID' }),
    to: opt('`<did-or-alias>` or `<did-or-alias>@<persona>`; exactly one of `to` / `recipient`'),
    recipient: opt('alternate name of `to`'),
    tag: opt('1–96 bytes UTF-8, no control characters'),
    application_id: opt('[a-z0-9._-]{1,64}; not used for routing'),
    timestamp: opt('ISO 8601, epoch ms or epoch s; exactly one of `timestamp` / `created_at`'),
    created_at: opt('alternate name of `timestamp`'),
    ttl: opt('duration text (§10.1.1)'),
    delivery_hint: opt('1–64 bytes, not interpreted'),
    payload: Type.Object(
      {
        ciphertext_b64: Type.Optional(Type.String({ description: 'standard Base64' })),
        cbor_b64: Type.Optional(Type.String({ description: 'the plaintext profile' })),
      },
      { description: 'the encrypted application payload, opaque' },
    ),
    encrypted_header: opt('standard Base64; then header_nonce, header_key_id and schema_version are required'),
    header_nonce: opt('standard Base64'),
    header_key_id: opt('≤ 128 bytes'),
    schema_version: opt('≤ 32 bytes'),
    context: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], { description: 'not interpreted' })),
    message_group_id: opt('UUID of a chunk set; then sequence_number and total_chunks are required'),
    sequence_number: Type.Optional(Type.Integer({ minimum: 0 })),
    total_chunks: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    sender: opt('sender DID; with sender_key_id and sender_signature'),
    sender_key_id: opt('`root` or a verification-method id of `sender`'),
    sender_signature: opt('Base64 Ed25519 signature (§10.2)'),
    // policy provenance (§10.6): only on node-signed requests (else 400 client_policy_context_forbidden)
    policy_context: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'node-signed requests only' })),
    policy_id: opt('node-signed requests only: 0x + 64 hex'),
    policy_revision: Type.Optional(Type.Integer({ description: 'node-signed requests only' })),
    policy_rule_id: opt('node-signed requests only'),
    policy_block_hash: opt('node-signed requests only: 0x + 64 hex'),
    policy_block_number: Type.Optional(Type.Integer({ description: 'node-signed requests only' })),
  },
  // the field set is closed: any other member is 400 unknown_field. One of `to` / `recipient` and one of
  // `timestamp` / `created_at` is required (both names may be sent when they carry the same value).
  {
    title: 'Envelope',
    additionalProperties: false,
    allOf: [{ anyOf: [{ required: ['to'] }, { required: ['recipient'] }] }, { anyOf: [{ required: ['timestamp'] }, { required: ['created_at'] }] }],
  },
);
export type EnvelopeJson = Static<typeof EnvelopeSchema>;
