/**
 * Wire shapes of Directory reads (http-api.md §3, §6) as TypeBox schemas: the routes declare them (OpenAPI), the
 * Directory builds its answers as their static types and the SDK reads them as the same types. The other
 * Directory routes' shapes: directory-writes.ts (§4, §5), personas.ts (§7), policies.ts (§8), applications.ts
 * (§9), history.ts (history, export), meta.ts (health, readiness); shared JSON forms: json-forms.ts.
 */
import { SubjectKindSchema } from './explorer.js';
import { Type, type Static } from 'typebox';
import { BlockRefFields, DecimalSchema, EffectiveConstraintsSchema, JsonObjectSchema, RenderedDidDocumentSchema, U64NumberSchema } from './json-forms.js';

/** A failed transaction's or block extrinsic's error (§3.4, §3.5). */
export const LedgerErrorSchema = Type.Object({ code: Type.String(), message: Type.String(), ledger_error: Type.String() });
export type LedgerErrorJson = Static<typeof LedgerErrorSchema>;

/** `GET /registration-status/{did}` (§3.2). */
export const RegistrationStatusSchema = Type.Object(
  {
    did: Type.String(),
    registration_status: Type.Enum(['pending', 'confirmed', 'missing']),
    version: Type.Integer(),
    deactivated: Type.Boolean(),
    tx_id: Type.Optional(Type.String()),
    tx_hash: Type.Optional(Type.String()),
    last_error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() })),
  },
  { title: 'RegistrationStatus' },
);
export type RegistrationStatusResponse = Static<typeof RegistrationStatusSchema>;

/** `GET /dids/{did}/nonces` (§3.3): next usable values, decimal strings. */
export const NoncesSchema = Type.Object(
  {
    did: Type.String(),
    alias_nonce: DecimalSchema('next alias nonce'),
    document_nonce: DecimalSchema('next document nonce'),
    root_pubkey_nonce: DecimalSchema('next root key nonce'),
    control_nonce: DecimalSchema('next control nonce'),
    policy_nonce: DecimalSchema('next v2 policy nonce'),
    policy_v3_nonce: DecimalSchema('next v3 policy nonce'),
    operator_nonce: DecimalSchema('next operator nonce'),
    application_nonce: DecimalSchema('next application nonce'),
  },
  { title: 'Nonces' },
);
export type NoncesResponse = Static<typeof NoncesSchema>;

/** `GET /transactions/{tx_hash}` (§3.4). */
export const TransactionSchema = Type.Object(
  {
    tx_hash: Type.String(),
    status: Type.Enum(['pending', 'in_block', 'finalized', 'failed']),
    extrinsic: Type.String(),
    submitted_at: Type.String(),
    block_number: Type.Optional(Type.Integer()),
    block_hash: Type.Optional(Type.String()),
    error: Type.Optional(LedgerErrorSchema),
  },
  { title: 'Transaction' },
);
export type TransactionResponse = Static<typeof TransactionSchema>;

/** `GET /aliases/{alias}` (§3.6). */
export const AliasSchema = Type.Object({ alias: Type.String(), did: Type.String() }, { title: 'Alias' });
export type AliasResponse = Static<typeof AliasSchema>;

/** A pending change touching a DID (§2.3 `pending_operations`). */
export const PendingOperationSchema = Type.Object({
  action: Type.String(),
  nonce_domain: Type.Union([Type.String(), Type.Null()]),
  nonce: Type.Union([Type.String(), Type.Null()]),
  tx_hash: Type.String(),
  submitted_at: Type.String(),
});
export type PendingOperationJson = Static<typeof PendingOperationSchema>;

/** `GET /resolve/{did}` (§3.1): the flat DID record, finalized state plus pending markers. */
export const DidRecordSchema = Type.Object(
  {
    did: Type.String(),
    owner: Type.Null(),
    aliases: Type.Array(Type.String()),
    devices: Type.Array(Type.Object({ deviceId: Type.String(), addedAt: Type.Integer(), tombstoned: Type.Boolean() })),
    version: Type.Integer(),
    document: Type.Union([RenderedDidDocumentSchema, Type.Null()]),
    updatedAt: Type.Integer(),
    freshness: Type.Literal('finalized'),
    registration_status: Type.Literal('confirmed'),
    root_pubkey: Type.String(),
    deactivated: Type.Boolean(),
    tx_id: Type.Optional(Type.String()),
    document_nonce: DecimalSchema('finalized document nonce'),
    pending_document_nonce: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    pending_document_action: Type.Boolean(),
    pending_document_action_name: Type.Optional(Type.String()),
    pending_extrinsic_hash: Type.Optional(Type.String()),
    pending_document_submitted_at: Type.Optional(Type.String()),
    pending_operations: Type.Array(PendingOperationSchema),
    ...BlockRefFields,
  },
  { title: 'DidRecord' },
);
export type DidRecordResponse = Static<typeof DidRecordSchema>;

/** A block's transaction (§3.5). */
export const BlockExtrinsicSchema = Type.Object({
  tx_hash: Type.String(),
  extrinsic: Type.String(),
  success: Type.Boolean(),
  error: Type.Optional(LedgerErrorSchema),
  action: Type.Optional(Type.String({ description: 'ddn: the Directory action that submitted it' })),
  subject: Type.Optional(Type.String({ description: 'ddn: the DID, persona or application id it is about' })),
  subject_kind: Type.Optional(SubjectKindSchema),
});

/** `GET /blocks/latest`, `GET /blocks/{number}` (§3.5). */
export const BlockSchema = Type.Object(
  {
    number: Type.Integer(),
    hash: Type.String(),
    parent_hash: Type.String(),
    timestamp: Type.Integer({ description: 'Unix ms' }),
    timestamp_iso: Type.String(),
    extrinsics_root: Type.String(),
    results_root: Type.String(),
    finalized: Type.Boolean(),
    finalized_number: Type.Integer(),
    extrinsics: Type.Array(BlockExtrinsicSchema),
  },
  { title: 'Block' },
);
export type BlockResponse = Static<typeof BlockSchema>;

/** The winning rule of a delivery resolution (§6). */
export const ResolvedPolicySchema = Type.Object({
  source: Type.Enum(['did', 'persona']),
  source_id: Type.String(),
  policy_id: Type.String(),
  policy_revision: U64NumberSchema,
  rule_id: Type.String(),
  rule_priority: Type.Integer(),
  action: JsonObjectSchema,
  effective_constraints: EffectiveConstraintsSchema,
  policy_ttl_seconds: Type.Integer({ minimum: 1, maximum: 300 }),
});

/** `GET /delivery-resolution/{did}` 200 (§6). */
export const DeliveryResolutionSchema = Type.Object(
  {
    target: Type.String({ description: 'the path DID exactly as requested' }),
    encryption_profile: Type.String(),
    recipient_key_id: Type.String(),
    recipient_public_key_multibase: Type.String(),
    policy: Type.Union([ResolvedPolicySchema, Type.Null()]),
    effective_constraints: EffectiveConstraintsSchema,
    ...BlockRefFields,
  },
  { title: 'DeliveryResolution' },
);
export type DeliveryResolutionResponse = Static<typeof DeliveryResolutionSchema>;

/** `?tag=&persona=` of `GET /delivery-resolution/{did}` and `GET /delivery-view/{did}`. */
export const DeliveryQuerySchema = Type.Object({
  tag: Type.Optional(Type.String({ description: 'a valid tag (ledger-rules.md §7.4)' })),
  persona: Type.Optional(Type.String({ description: 'a persona name, canonicalised' })),
});

/** `GET /delivery-view/{did}` 200 [ddn-internal]: what a Relay or Cache in another process asks (src/ports). */
export const DeliveryViewSchema = Type.Object(
  {
    recipient: Type.Object({
      did: Type.String(),
      deactivated: Type.Boolean(),
      document: Type.Union([RenderedDidDocumentSchema, Type.Null()]),
      root_pubkey: Type.String(),
    }),
    persona: Type.Union([Type.String(), Type.Null()]),
    persona_state: Type.Union([Type.String(), Type.Null()]),
    policy: Type.Union([JsonObjectSchema, Type.Null()]),
    effective_constraints: JsonObjectSchema,
    ...BlockRefFields,
  },
  { title: 'DeliveryView' },
);
