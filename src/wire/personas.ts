/** Wire shapes of the persona routes (http-api.md §7) as TypeBox schemas: reads, DNS challenges, writes. */
import { Type, type Static } from 'typebox';
import { AcceptedFields, BlockRefFields, DecimalSchema, DeliveryConstraintsSchema, JsonObjectSchema, PreparedFields, SignedFields } from './json-forms.js';

const OPERATIONS = ['Register', 'Renew', 'RegisterNamed', 'Revoke', 'RotateControllers', 'Transfer'] as const;
const PERSONA_ACTIONS = [
  'register_persona',
  'renew_persona',
  'transfer_persona',
  'register_named_persona',
  'revoke_persona',
  'rotate_persona_controllers',
] as const;

/**
 * `GET /personas/{persona}` 200 (§7.1): one flat record for DNS and named personas. The canonical name is `name`;
 * there is no top-level `persona` key (a deployed client reads `persona`, when present, as the record).
 */
export const PersonaRecordSchema = Type.Object(
  {
    name: Type.String({ description: 'the canonical persona name' }),
    kind: Type.Enum(['dns', 'named']),
    dns_required: Type.Boolean(),
    operator_did: Type.String(),
    controller_keys: Type.Array(Type.String()),
    controller_threshold: Type.Integer(),
    delivery_constraints: Type.Union([DeliveryConstraintsSchema, Type.Null()]),
    dns_proof_hash: Type.Union([Type.String(), Type.Null()]),
    verified_at: Type.Integer({ description: 'Unix ms; 0 for named personas' }),
    verification_expires_at: Type.Integer({ description: 'Unix ms; 0 for named personas' }),
    revision: Type.Integer(),
    active: Type.Boolean(),
    expired: Type.Boolean(),
    deliverable: Type.Boolean(),
    ...BlockRefFields,
    pending_operations: Type.Array(
      Type.Object({
        operation: Type.String(),
        action: Type.String(),
        nonce: Type.Union([Type.String(), Type.Null()]),
        tx_hash: Type.String(),
        submitted_at: Type.String(),
      }),
    ),
  },
  { title: 'PersonaRecord' },
);
export type PersonaRecordResponse = Static<typeof PersonaRecordSchema>;

/** `GET /personas/{persona}/nonces` 200 (§7.1): decimal strings, pool state. */
export const PersonaNoncesSchema = Type.Object(
  {
    persona: Type.String(),
    operator_did: Type.String(),
    persona_nonce: DecimalSchema('challenge nonce of the name'),
    operator_nonce: DecimalSchema("the operator DID's"),
    policy_nonce: DecimalSchema("the operator DID's v2 policy nonce"),
    policy_v3_nonce: DecimalSchema("the operator DID's v3 policy nonce"),
  },
  { title: 'PersonaNonces' },
);
export type PersonaNoncesResponse = Static<typeof PersonaNoncesSchema>;

/** `GET /persona-operators/{did}/nonce` 200 (§7.1). */
export const OperatorNonceSchema = Type.Object({ operator_did: Type.String(), operator_nonce: DecimalSchema() }, { title: 'OperatorNonce' });
export type OperatorNonceResponse = Static<typeof OperatorNonceSchema>;

/** `POST /personas/{persona}/dns-challenges` body (§7.2). */
export const ChallengeCreateBodySchema = Type.Object(
  { operator_did: Type.String(), action: Type.Enum(['register_persona', 'renew_persona', 'transfer_persona']) },
  { title: 'ChallengeCreateBody' },
);

const ChallengeFields = {
  challenge_id: Type.String({ description: 'UUID v4' }),
  persona: Type.String(),
  operator_did: Type.String(),
  action: Type.Enum(['register_persona', 'renew_persona', 'transfer_persona']),
  challenge_nonce: DecimalSchema(),
  persona_nonce: DecimalSchema(),
  operator_nonce: DecimalSchema(),
  current_operator_did: Type.Optional(Type.String({ description: 'transfer_persona only' })),
  record_name: Type.String(),
  record_type: Type.Literal('TXT'),
  record_value: Type.String(),
  expires_at: Type.String({ description: 'ISO 8601' }),
  directory_url: Type.Optional(Type.String()),
};

/** `POST /personas/{persona}/dns-challenges` 201 (§7.2). */
export const ChallengeSchema = Type.Object(ChallengeFields, { title: 'DnsChallenge' });
export type ChallengeResponse = Static<typeof ChallengeSchema>;

/** `POST …/dns-challenges/{challenge_id}/verify` body (§7.3): the intent. */
export const ChallengeVerifyBodySchema = Type.Object(
  {
    operator_did: Type.String(),
    action: Type.String(),
    challenge_id: Type.Optional(Type.String()),
    nonce: Type.Union([Type.String(), Type.Integer()]),
    verification_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 365 })),
    controller_keys: Type.Optional(Type.Array(Type.String())),
    controller_threshold: Type.Optional(Type.Literal(1)),
    delivery_constraints: Type.Optional(DeliveryConstraintsSchema),
    signer_key_id: Type.Optional(Type.String()),
    valid_until: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
  },
  { title: 'ChallengeVerifyBody' },
);

/** The verification outputs (§7.3): the verify answer, and a verified challenge's fields. */
const VerificationFields = {
  verified: Type.Literal(true),
  operation: Type.Enum(['Register', 'Renew', 'Transfer']),
  extrinsic: Type.Literal('apply_persona_with_proof'),
  nonce: DecimalSchema(),
  valid_until: DecimalSchema(),
  signer_key_id: Type.String(),
  controller_keys: Type.Array(Type.String()),
  controller_threshold: Type.Integer(),
  delivery_constraints: Type.Union([DeliveryConstraintsSchema, Type.Null()]),
  dns_proof_hash: Type.String(),
  verification_expires_at: Type.Integer({ description: 'Unix ms' }),
  attestor: Type.String(),
  attestation_signature: Type.String(),
  canonical_payload: Type.Optional(Type.String({ description: 'register / renew' })),
  payload_to_sign: Type.Optional(Type.String({ description: 'register / renew' })),
  acceptance_payload: Type.Optional(Type.String({ description: 'transfer only: signed by the new operator' })),
  request: Type.Optional(JsonObjectSchema),
};

/** `POST …/dns-challenges/{challenge_id}/verify` 200 (§7.3). */
export const ChallengeVerifySchema = Type.Object(
  {
    challenge_id: Type.String(),
    persona: Type.String(),
    operator_did: Type.String(),
    action: ChallengeFields.action,
    challenge_nonce: DecimalSchema(),
    current_operator_did: Type.Optional(Type.String()),
    ...VerificationFields,
  },
  { title: 'ChallengeVerification' },
);
export type ChallengeVerifyResponse = Static<typeof ChallengeVerifySchema>;

/** `GET /personas/{persona}/dns-challenges/{challenge_id}` 200 (§7.2): the challenge, its status, any verification. */
export const ChallengeStatusSchema = Type.Object(
  {
    ...ChallengeFields,
    status: Type.Enum(['pending', 'verified', 'used', 'expired']),
    ...Type.Partial(Type.Object(VerificationFields)).properties,
    tx_hash: Type.Optional(Type.String({ description: 'once used' })),
  },
  { title: 'DnsChallengeStatus' },
);
export type ChallengeStatusResponse = Static<typeof ChallengeStatusSchema>;

/** The body of a persona write (§7.4–§7.7): the prepared or verified `request` plus `signature`. */
export const PersonaSubmitBodySchema = Type.Object(
  {
    persona: Type.Optional(Type.String()),
    action: Type.Enum(PERSONA_ACTIONS),
    operator_did: Type.Optional(Type.String()),
    controller_keys: Type.Optional(Type.Array(Type.String())),
    controller_threshold: Type.Optional(Type.Integer()),
    delivery_constraints: Type.Optional(DeliveryConstraintsSchema),
    challenge_id: Type.Optional(Type.String()),
    verification_expires_at: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
    attestor: Type.Optional(Type.String()),
    attestation_signature: Type.Optional(Type.String()),
    new_operator_did: Type.Optional(Type.String({ description: 'transfer' })),
    new_controller_keys: Type.Optional(Type.Array(Type.String(), { description: 'transfer' })),
    new_controller_threshold: Type.Optional(Type.Integer({ description: 'transfer' })),
    new_operator_signer_key_id: Type.Optional(Type.String({ description: 'transfer' })),
    new_operator_signature: Type.Optional(Type.String({ description: 'transfer' })),
    ...SignedFields,
  },
  { title: 'PersonaSubmitBody' },
);

/** `POST /personas/{persona}/named/prepare`, `…/prepare`, `…/transfer/prepare` body (§7.5–§7.7). */
export const PersonaPrepareBodySchema = Type.Object(
  {
    persona: Type.Optional(Type.String()),
    action: Type.Optional(Type.Enum(PERSONA_ACTIONS)),
    operator_did: Type.Optional(Type.String()),
    signer_key_id: Type.Optional(Type.String()),
    valid_until: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
    controller_keys: Type.Optional(Type.Array(Type.String())),
    controller_threshold: Type.Optional(Type.Integer()),
    delivery_constraints: Type.Optional(DeliveryConstraintsSchema),
    challenge_id: Type.Optional(Type.String({ description: 'transfer' })),
    new_operator_signature: Type.Optional(Type.String({ description: 'transfer' })),
  },
  { title: 'PersonaPrepareBody' },
);

/** A persona preparation's 200 (§7.5–§7.7). */
export const PersonaPrepareSchema = Type.Object(
  {
    persona: Type.String(),
    operator_did: Type.String(),
    new_operator_did: Type.Optional(Type.String({ description: 'transfer' })),
    action: Type.Enum(PERSONA_ACTIONS),
    operation: Type.Enum(OPERATIONS),
    extrinsic: Type.Literal('apply_persona_with_proof'),
    nonce_domain: Type.Literal('operator_nonce'),
    nonce: DecimalSchema(),
    valid_until: DecimalSchema(),
    signer_key_id: Type.String(),
    ...PreparedFields,
    request: JsonObjectSchema,
  },
  { title: 'PersonaPrepare' },
);
export type PersonaPrepareResponse = Static<typeof PersonaPrepareSchema>;

/** 202 of a persona write (§7.4–§7.7). */
export const PersonaSubmitSchema = Type.Object(
  {
    ...AcceptedFields,
    persona: Type.String(),
    operator_did: Type.Optional(Type.String()),
    new_operator_did: Type.Optional(Type.String({ description: 'transfer' })),
    action: Type.Enum(PERSONA_ACTIONS),
    operation: Type.Enum(OPERATIONS),
    nonce_domain: Type.Literal('operator_nonce'),
    nonce: DecimalSchema(),
  },
  { title: 'PersonaSubmit' },
);
export type PersonaSubmitResponse = Static<typeof PersonaSubmitSchema>;
