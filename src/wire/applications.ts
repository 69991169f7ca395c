/** Wire shapes of the application routes (http-api.md §9) as TypeBox schemas. Application nonces are integers. */
import { Type, type Static, type TProperties } from 'typebox';
import { AcceptedFields, BlockRefFields, DeliveryPolicySchema, JsonObjectSchema, PreparedFields } from './json-forms.js';

const AUTH_ACTIONS = ['set_domain', 'clear_domain', 'set_status', 'update_control', 'link_did', 'unlink_did'] as const;
const STATUSES = ['active', 'suspended', 'tombstoned'] as const;

/** `{application_id}`: 1–64 characters of `[a-z0-9._-]`. */
export const ApplicationParamsSchema = Type.Object({ application_id: Type.String({ description: '1–64 characters of [a-z0-9._-]' }) });

/** `GET /applications/{application_id}` 200 (§9). */
export const ApplicationSchema = Type.Object(
  {
    application_id: Type.String(),
    control_did: Type.String(),
    status: Type.Enum(STATUSES),
    application_revision: Type.Integer(),
    registered_at: Type.Integer({ description: 'block number' }),
    updated_at: Type.Integer({ description: 'block number' }),
    domain: Type.Union([Type.String(), Type.Null()]),
    domain_verified: Type.Boolean(),
    linked_dids: Type.Array(Type.String()),
    policy_revision: Type.Union([Type.Integer(), Type.Null()]),
    ...BlockRefFields,
  },
  { title: 'Application' },
);
export type ApplicationResponse = Static<typeof ApplicationSchema>;

/** `GET /applications/{application_id}/policy` 200 (§9). */
export const ApplicationPolicySchema = Type.Object(
  {
    application_id: Type.String(),
    control_did: Type.String(),
    application_revision: Type.Integer(),
    policy_revision: Type.Integer(),
    policy_ttl_seconds: Type.Integer(),
    policy: DeliveryPolicySchema,
    ...BlockRefFields,
  },
  { title: 'ApplicationPolicy' },
);
export type ApplicationPolicyResponse = Static<typeof ApplicationPolicySchema>;

/** `POST /applications/{application_id}/registration/prepare` body (§9). */
export const ApplicationRegistrationPrepareBodySchema = Type.Object(
  { control_did: Type.String(), signer_key_id: Type.String() },
  { title: 'ApplicationRegistrationPrepareBody' },
);

/** `POST /applications/{application_id}/registration/prepare` 200 (§9). */
export const ApplicationRegistrationPrepareSchema = Type.Object(
  {
    application_id: Type.String(),
    control_did: Type.String(),
    signer_key_id: Type.String(),
    nonce: Type.Integer(),
    extrinsic: Type.Literal('register_application'),
    ...PreparedFields,
    request: Type.Object({ control_did: Type.String(), signer_key_id: Type.String(), nonce: Type.Integer(), canonical_payload: Type.String() }),
  },
  { title: 'ApplicationRegistrationPrepare' },
);
export type ApplicationRegistrationPrepareResponse = Static<typeof ApplicationRegistrationPrepareSchema>;

/** `PUT /applications/{application_id}/registration` body (§9). */
export const ApplicationRegistrationBodySchema = Type.Object(
  {
    control_did: Type.String(),
    signer_key_id: Type.String(),
    nonce: Type.Integer(),
    canonical_payload: Type.String({ description: '`0x`-hex exactly as prepared' }),
    signature: Type.String({ description: 'Base64, 64 bytes' }),
  },
  { title: 'ApplicationRegistrationBody' },
);

/** Each authorization action's own fields (§9 table). */
const AUTH_FIELDS = {
  set_domain: { domain: Type.String({ description: 'a lowercase DNS name' }) },
  clear_domain: {},
  set_status: { status: Type.Enum(STATUSES) },
  update_control: { new_control_did: Type.String() },
  link_did: { linked_did: Type.String() },
  unlink_did: { linked_did: Type.String() },
} as const satisfies Record<(typeof AUTH_ACTIONS)[number], TProperties>;

const linking = (action: string): boolean => action === 'link_did' || action === 'unlink_did';

/** `POST /applications/{application_id}/authorization/prepare` body (§9): one action's fields; signers default to `root`. */
export const ApplicationAuthorizationPrepareBodySchema = Type.Union(
  AUTH_ACTIONS.map((action) =>
    Type.Object(
      {
        action: Type.Literal(action),
        ...AUTH_FIELDS[action],
        control_signer_key_id: Type.Optional(Type.String({ description: 'a key of the (current) control DID; default `root`' })),
        ...(linking(action) ? { linked_signer_key_id: Type.Optional(Type.String({ description: 'default `root`' })) } : {}),
      },
      { title: `ApplicationAuthorizationPrepareBody_${action}` },
    ),
  ),
  { title: 'ApplicationAuthorizationPrepareBody' },
);

/** `POST /applications/{application_id}/authorization/prepare` 200 (§9). */
export const ApplicationAuthorizationPrepareSchema = Type.Object(
  {
    application_id: Type.String(),
    action: Type.Enum(AUTH_ACTIONS),
    control_did: Type.String(),
    nonce: Type.Integer(),
    extrinsic: Type.String(),
    ...PreparedFields,
    request: JsonObjectSchema,
  },
  { title: 'ApplicationAuthorizationPrepare' },
);
export type ApplicationAuthorizationPrepareResponse = Static<typeof ApplicationAuthorizationPrepareSchema>;

/**
 * `PUT /applications/{application_id}/authorization` body (§9): the prepared `request` plus the control DID's
 * signature as `control_signature` (or its synonym `signature`) and, linking, the linked DID's `linked_signature`.
 */
export const ApplicationAuthorizationBodySchema = Type.Union(
  AUTH_ACTIONS.map((action) =>
    Type.Object(
      {
        action: Type.Literal(action),
        ...AUTH_FIELDS[action],
        control_did: Type.Optional(Type.String({ description: "the application's control DID" })),
        control_signer_key_id: Type.String(),
        ...(linking(action) ? { linked_signer_key_id: Type.String() } : {}),
        nonce: Type.Integer(),
        canonical_payload: Type.String({ description: '`0x`-hex exactly as prepared' }),
        control_signature: Type.Optional(Type.String({ description: 'Base64 (hex accepted); `signature` is accepted as a synonym' })),
        signature: Type.Optional(Type.String()),
        ...(linking(action) ? { linked_signature: Type.String() } : {}),
      },
      { title: `ApplicationAuthorizationBody_${action}` },
    ),
  ),
  { title: 'ApplicationAuthorizationBody' },
);

/** 202 of an application registration or authorization (§9). */
export const ApplicationSubmitSchema = Type.Object(
  {
    ...AcceptedFields,
    application_id: Type.String(),
    control_did: Type.String(),
    action: Type.String(),
    nonce_domain: Type.Literal('application_nonce'),
    nonce: Type.Integer(),
  },
  { title: 'ApplicationSubmit' },
);
export type ApplicationSubmitResponse = Static<typeof ApplicationSubmitSchema>;
