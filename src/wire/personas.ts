/** Wire shapes of the persona routes (http-api.md §7) as TypeBox schemas: reads, DNS challenges, writes. */
import { Type, type Static } from 'typebox';
import {
  AcceptedFields,
  BlockRefFields,
  DecimalSchema,
  DeliveryConstraintsSchema,
  JsonObjectSchema,
  PreparedFields,
  SignedSubmitFields,
} from './json-forms.js';

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

/** A body's optional copy of the `persona` path parameter (§0.4: `path_body_mismatch` when it differs). */
const PersonaCopy = { persona: Type.Optional(Type.String({ description: 'a copy of the path (compared after canonicalisation)' })) };

/** `POST /personas/{persona}/dns-challenges` body (§7.2). */
export const ChallengeCreateBodySchema = Type.Object(
  { ...PersonaCopy, operator_did: Type.String(), action: Type.Enum(['register_persona', 'renew_persona', 'transfer_persona']) },
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
    ...PersonaCopy,
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

const Controllers = { controller_keys: Type.Array(Type.String(), { description: '1–8 key ids' }), controller_threshold: Type.Integer({ description: '1' }) };
const PrepareAuth = {
  signer_key_id: Type.Optional(Type.String({ description: 'default `root`' })),
  valid_until: Type.Optional(Type.Union([Type.String(), Type.Integer()], { description: 'default now + 300 s' })),
};
/** The verified DNS challenge's outputs a register, renew or transfer submission repeats (§7.4, §7.7). */
const Attestation = {
  challenge_id: Type.String(),
  verification_expires_at: Type.Union([Type.String(), Type.Integer()], { description: 'Unix ms, from the verification' }),
  attestor: Type.String({ description: '`0x`-hex, from the verification' }),
  attestation_signature: Type.String({ description: '`0x`-hex, from the verification' }),
};

/** `PUT /personas/{persona}` body (§7.4): the verified intent plus `signature`. */
export const PersonaDnsSubmitBodySchema = Type.Object(
  {
    action: Type.Enum(['register_persona', 'renew_persona']),
    ...PersonaCopy,
    operator_did: Type.String(),
    controller_keys: Type.Optional(Type.Array(Type.String(), { description: 'registration; renewal omits it or repeats the stored set' })),
    controller_threshold: Type.Optional(Type.Integer({ description: '1 when supplied' })),
    delivery_constraints: Type.Optional(DeliveryConstraintsSchema),
    ...Attestation,
    ...SignedSubmitFields,
  },
  { title: 'PersonaDnsSubmitBody' },
);

/** `POST /personas/{persona}/named/prepare` body (§7.5). */
export const NamedPersonaPrepareBodySchema = Type.Object(
  {
    ...PersonaCopy,
    action: Type.Optional(Type.Literal('register_named_persona')),
    operator_did: Type.String(),
    ...PrepareAuth,
    ...Type.Partial(Type.Object(Controllers)).properties,
    delivery_constraints: Type.Optional(DeliveryConstraintsSchema),
  },
  { title: 'NamedPersonaPrepareBody' },
);

/**
 * `PUT /personas/{persona}/named` body (§7.5). `controller_keys` and `controller_threshold` are required on every
 * profile but `openpayload` (src/directory/openapi-profile.ts), whose deployed clients may leave them to the defaults.
 */
export const NamedPersonaSubmitBodySchema = Type.Object(
  {
    ...PersonaCopy,
    action: Type.Literal('register_named_persona'),
    operator_did: Type.String(),
    ...Type.Partial(Type.Object(Controllers)).properties,
    delivery_constraints: Type.Optional(DeliveryConstraintsSchema),
    ...SignedSubmitFields,
  },
  { title: 'NamedPersonaSubmitBody' },
);

/** `POST /personas/{persona}/prepare` body (§7.6): a revocation, or a rotation with its new set. */
export const PersonaControlPrepareBodySchema = Type.Object(
  {
    ...PersonaCopy,
    action: Type.Enum(['revoke_persona', 'rotate_persona_controllers']),
    operator_did: Type.Optional(Type.String({ description: "the persona's operator" })),
    ...PrepareAuth,
    ...Type.Partial(Type.Object(Controllers, { description: 'rotation' })).properties,
  },
  { title: 'PersonaControlPrepareBody' },
);

/** `DELETE /personas/{persona}` body (§7.6). */
export const PersonaRevokeBodySchema = Type.Object(
  {
    persona: Type.String(),
    action: Type.Literal('revoke_persona'),
    operator_did: Type.Optional(Type.String({ description: "the persona's operator" })),
    ...SignedSubmitFields,
  },
  { title: 'PersonaRevokeBody' },
);

/** `PUT /personas/{persona}/controllers` body (§7.6). */
export const PersonaRotateBodySchema = Type.Object(
  { persona: Type.String(), operator_did: Type.String(), action: Type.Literal('rotate_persona_controllers'), ...Controllers, ...SignedSubmitFields },
  { title: 'PersonaRotateBody' },
);

/** `POST /personas/{persona}/transfer/prepare` body (§7.7 step 3): the current operator's. */
export const PersonaTransferPrepareBodySchema = Type.Object(
  {
    ...PersonaCopy,
    operator_did: Type.String({ description: 'the current operator' }),
    challenge_id: Type.String(),
    new_operator_signature: Type.String({ description: "the new operator's, over the acceptance payload" }),
    ...PrepareAuth,
  },
  { title: 'PersonaTransferPrepareBody' },
);

/** `PUT /personas/{persona}/transfer` body (§7.7 step 4). */
export const PersonaTransferSubmitBodySchema = Type.Object(
  {
    persona: Type.String(),
    action: Type.Literal('transfer_persona'),
    operator_did: Type.String({ description: 'the current operator' }),
    new_operator_did: Type.String(),
    new_controller_keys: Type.Array(Type.String()),
    new_controller_threshold: Type.Integer(),
    delivery_constraints: Type.Optional(DeliveryConstraintsSchema),
    ...Attestation,
    new_operator_signer_key_id: Type.String(),
    new_operator_signature: Type.String(),
    ...SignedSubmitFields,
  },
  { title: 'PersonaTransferSubmitBody' },
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
