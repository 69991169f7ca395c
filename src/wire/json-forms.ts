/**
 * JSON forms shared by several Directory routes (http-api.md §2.1, §2.6, §8.1) as TypeBox schemas: documents,
 * constraints, delivery policies and the common signed-body fields.
 */
import { Type, type Static, type TProperties } from 'typebox';

/** A JSON object whose members are not described further (payload templates, free-form details). */
export const JsonObjectSchema = Type.Record(Type.String(), Type.Unknown());

/** A decimal u64 as a string (nonces, `valid_until`). */
export const DecimalSchema = (description?: string) => Type.String({ pattern: '^[0-9]+$', ...(description === undefined ? {} : { description }) });

/** A u64 as a JSON number; a decimal string only beyond 2^53 (policy revisions). */
export const U64NumberSchema = Type.Union([Type.Integer(), Type.String({ pattern: '^[0-9]+$' })], {
  description: 'an integer; a decimal string only beyond 2^53',
});

/** `0x` + hex bytes. */
export const HexSchema = (description?: string) => Type.String({ pattern: '^0x[0-9a-fA-F]*$', ...(description === undefined ? {} : { description }) });

/** The finalized block a read was answered from. */
export const BlockRefFields = { block_number: Type.Integer(), block_hash: Type.String() };

/** A verification method or key agreement (§2.6). */
export const VerificationMethodSchema = Type.Object(
  { id: Type.String(), type: Type.String(), controller: Type.String(), publicKeyMultibase: Type.String() },
  { title: 'VerificationMethod' },
);
export type VerificationMethodJson = Static<typeof VerificationMethodSchema>;

/** A service (§2.6). */
export const ServiceSchema = Type.Object(
  {
    id: Type.String(),
    type: Type.String(),
    serviceEndpoint: Type.Union([Type.String(), Type.Array(Type.String())]),
    authorization: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
    priority: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  },
  { title: 'Service' },
);
export type ServiceJson = Static<typeof ServiceSchema>;

/** A DID document as sent (§2.6): `id` and any of the four arrays. */
export const DidDocumentSchema = Type.Object(
  {
    id: Type.String(),
    verificationMethod: Type.Optional(Type.Array(VerificationMethodSchema)),
    authentication: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
    keyAgreement: Type.Optional(Type.Array(VerificationMethodSchema)),
    service: Type.Optional(Type.Union([Type.Array(ServiceSchema), Type.Null()])),
  },
  { title: 'DidDocument' },
);
export type DidDocumentJson = Static<typeof DidDocumentSchema>;

/** A document as the Directory renders it (ledger-rules.md §3.3): all five keys, arrays always. */
export const RenderedDidDocumentSchema = Type.Object(
  {
    id: Type.String(),
    verificationMethod: Type.Array(VerificationMethodSchema),
    authentication: Type.Array(Type.String()),
    keyAgreement: Type.Array(VerificationMethodSchema),
    service: Type.Array(ServiceSchema),
  },
  { title: 'RenderedDidDocument' },
);
export type RenderedDidDocumentJson = Static<typeof RenderedDidDocumentSchema>;

const positive = () => Type.Integer({ minimum: 1 });

/** Effective constraints (§6): positive integers. */
export const EffectiveConstraintsSchema = Type.Object(
  {
    requested_cache_seconds: positive(),
    effective_ttl_seconds: positive(),
    max_http_envelope_bytes: positive(),
    max_unchunked_message_bytes: positive(),
    max_chunk_bytes: positive(),
    max_replicas: positive(),
  },
  { title: 'EffectiveConstraints' },
);
export type EffectiveConstraintsJson = Static<typeof EffectiveConstraintsSchema>;

/** A constraints object (§8.1 `delivery_constraints`): stored values, with `effective_ttl_seconds` in responses. */
export const DeliveryConstraintsSchema = Type.Object(
  {
    requested_cache_seconds: Type.Integer(),
    max_http_envelope_bytes: Type.Integer(),
    max_unchunked_message_bytes: Type.Integer(),
    max_chunk_bytes: Type.Integer(),
    max_replicas: Type.Integer(),
    max_message_bytes: Type.Optional(Type.Integer()),
    max_chunks: Type.Optional(Type.Integer()),
    effective_ttl_seconds: Type.Optional(Type.Integer({ description: 'responses only; never sent' })),
  },
  { title: 'DeliveryConstraints' },
);
export type DeliveryConstraintsJson = Static<typeof DeliveryConstraintsSchema>;

/** A v3 scope (§8.1): a DID, a persona or an application. */
export const PolicyScopeSchema = Type.Object({ type: Type.Enum(['DID', 'PERSONA', 'APPLICATION']), id: Type.String() }, { title: 'PolicyScope' });
export type PolicyScopeJson = Static<typeof PolicyScopeSchema>;

/** A delivery rule (§8.1): conditions, action and overrides as JSON objects (their forms are in §8.1). */
export const PolicyRuleSchema = Type.Object(
  {
    id: Type.String(),
    priority: Type.Integer({ minimum: 0, maximum: 65535 }),
    conditions: Type.Optional(Type.Array(JsonObjectSchema)),
    action: JsonObjectSchema,
    constraint_overrides: Type.Optional(Type.Union([JsonObjectSchema, Type.Null()])),
  },
  { title: 'PolicyRule' },
);

/** A delivery policy (§8.1), v2 and v3 alike. Prepare routes fill `policy_id` and `revision`. */
export const DeliveryPolicySchema = Type.Object(
  {
    policy_id: Type.Optional(Type.String()),
    scope: PolicyScopeSchema,
    revision: Type.Optional(U64NumberSchema),
    operator_did: Type.String(),
    policy_ttl_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 300 })),
    ruleset: Type.Array(PolicyRuleSchema),
  },
  { title: 'DeliveryPolicy' },
);
export type DeliveryPolicyJson = Static<typeof DeliveryPolicySchema>;

/** The authorization fields of every signed body (§2.1). */
export const SignedFields = {
  nonce: Type.Union([Type.String(), Type.Integer()], { description: 'the current nonce of the domain (an integer on application routes)' }),
  valid_until: Type.Union([Type.String(), Type.Integer()], { description: 'Unix ms (or ISO 8601)' }),
  signer_key_id: Type.Optional(Type.String({ description: '`root` or a verification-method id' })),
  canonical_payload: Type.Optional(Type.String({ description: 'the signed bytes, `0x`-hex or Base64' })),
  signature: Type.String({ description: 'Ed25519, Base64 (hex accepted)' }),
} satisfies TProperties;

/** {@link SignedFields} where the spec requires all five (persona and policy submissions, §2.1). */
export const SignedSubmitFields = {
  ...SignedFields,
  signer_key_id: Type.String({ description: '`root` or a verification-method id' }),
  canonical_payload: Type.String({ description: 'the signed bytes, `0x`-hex or Base64' }),
} satisfies TProperties;

/** The fields of a preparation's answer that carry the bytes to sign. */
export const PreparedFields = {
  canonical_payload: HexSchema('the bytes to sign'),
  payload_to_sign: HexSchema('the same value'),
} satisfies TProperties;

/** A change accepted for processing, not final (§2.4): the fields every 202 carries. */
export const AcceptedFields = {
  status: Type.Literal('accepted'),
  tx_hash: Type.String({ pattern: '^0x[0-9a-f]{64}$' }),
  tx_id: Type.String({ description: 'same as tx_hash (older clients read it)' }),
  extrinsic: Type.String({ description: 'ledger call name' }),
  duplicate: Type.Optional(Type.Literal(true)),
  message: Type.Optional(Type.String()),
} satisfies TProperties;
