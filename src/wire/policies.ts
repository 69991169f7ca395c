/** Wire shapes of the delivery-policy routes (http-api.md §8.2 v2, §8.3 v3) as TypeBox schemas. */
import { Type, type Static } from 'typebox';
import {
  AcceptedFields,
  BlockRefFields,
  DecimalSchema,
  DeliveryConstraintsSchema,
  DeliveryPolicySchema,
  JsonObjectSchema,
  PolicyScopeSchema,
  PreparedFields,
  SignedFields,
} from './json-forms.js';

const V2_ACTIONS = [
  'set_did_policy_v2',
  'clear_did_policy_v2',
  'set_did_constraints',
  'set_persona_policy_v2',
  'clear_persona_policy_v2',
  'set_persona_constraints',
] as const;
const V3_ACTIONS = ['set_policy_v3', 'clear_policy_v3'] as const;
const OPERATIONS = ['SetPolicy', 'ClearPolicy', 'SetDidConstraints', 'SetPersonaConstraints'] as const;

/** `GET /delivery-policies/dids/{did}` 200 (§8.2). */
export const DidPolicyV2Schema = Type.Object(
  {
    did: Type.String(),
    policy: Type.Union([DeliveryPolicySchema, Type.Null()]),
    delivery_constraints: Type.Union([DeliveryConstraintsSchema, Type.Null()]),
    scope_constraints: DeliveryConstraintsSchema,
    ...BlockRefFields,
  },
  { title: 'DidPolicyV2' },
);
export type DidPolicyV2Response = Static<typeof DidPolicyV2Schema>;

/** `GET /delivery-policies/personas/{persona}` 200 (§8.2). */
export const PersonaPolicyV2Schema = Type.Object(
  {
    persona: Type.String(),
    operator_did: Type.String(),
    policy: Type.Union([DeliveryPolicySchema, Type.Null()]),
    delivery_constraints: Type.Union([DeliveryConstraintsSchema, Type.Null()]),
    scope_constraints: DeliveryConstraintsSchema,
    ...BlockRefFields,
  },
  { title: 'PersonaPolicyV2' },
);
export type PersonaPolicyV2Response = Static<typeof PersonaPolicyV2Schema>;

/** The body of `POST /delivery-policies/prepare` and of the v2 writes (§8.2); writes add the signed fields. */
const V2Fields = {
  action: Type.Enum(V2_ACTIONS),
  did: Type.Optional(Type.String()),
  persona: Type.Optional(Type.String()),
  operator_did: Type.Optional(Type.String()),
  policy: Type.Optional(DeliveryPolicySchema),
  delivery_constraints: Type.Optional(DeliveryConstraintsSchema),
};
export const PolicyV2PrepareBodySchema = Type.Object(
  { ...V2Fields, signer_key_id: Type.Optional(Type.String()), valid_until: Type.Optional(Type.Union([Type.String(), Type.Integer()])) },
  { title: 'PolicyV2PrepareBody' },
);
export const PolicyV2SubmitBodySchema = Type.Object({ ...V2Fields, ...SignedFields }, { title: 'PolicyV2SubmitBody' });

/** `POST /delivery-policies/prepare` 200 (§8.2). */
export const PolicyV2PrepareSchema = Type.Object(
  {
    action: Type.Enum(V2_ACTIONS),
    operation: Type.Enum(OPERATIONS),
    extrinsic: Type.Literal('apply_policy_v2_with_proof'),
    did: Type.Optional(Type.String()),
    persona: Type.Optional(Type.String()),
    operator_did: Type.String(),
    nonce_domain: Type.Literal('policy_nonce'),
    nonce: DecimalSchema(),
    valid_until: DecimalSchema(),
    signer_key_id: Type.String(),
    policy: Type.Optional(DeliveryPolicySchema),
    delivery_constraints: Type.Optional(DeliveryConstraintsSchema),
    ...PreparedFields,
    request: JsonObjectSchema,
  },
  { title: 'PolicyV2Prepare' },
);
export type PolicyV2PrepareResponse = Static<typeof PolicyV2PrepareSchema>;

/** 202 of a v2 write (§8.2); `did` carries the persona on persona routes. */
export const PolicyV2SubmitSchema = Type.Object(
  {
    ...AcceptedFields,
    did: Type.String(),
    persona: Type.Optional(Type.String()),
    operator_did: Type.String(),
    action: Type.Enum(V2_ACTIONS),
    operation: Type.Enum(OPERATIONS),
    policy_id: Type.Optional(Type.String({ description: 'SetPolicy only' })),
    revision: Type.Optional(Type.Integer({ description: 'SetPolicy only' })),
    nonce_domain: Type.Literal('policy_nonce'),
    nonce: DecimalSchema(),
  },
  { title: 'PolicyV2Submit' },
);
export type PolicyV2SubmitResponse = Static<typeof PolicyV2SubmitSchema>;

/** `{scope}` and `{id}` of the v3 routes (§8.3). */
export const PolicyV3ParamsSchema = Type.Object({
  scope: Type.Enum(['did', 'persona', 'application']),
  id: Type.String({ description: 'the DID, persona or application id, percent-encoded' }),
});

/** `GET /policies/v3/{scope}/{id}` 200 (§8.3). */
export const PolicyV3Schema = Type.Object({ scope: PolicyScopeSchema, policy: DeliveryPolicySchema, ...BlockRefFields }, { title: 'PolicyV3' });
export type PolicyV3Response = Static<typeof PolicyV3Schema>;

/** `GET /policies/v3/{scope}/{id}/nonce` 200 (§8.3). */
export const PolicyV3NonceSchema = Type.Object(
  { scope: PolicyScopeSchema, operator_did: Type.String({ description: 'the current owner' }), nonce: DecimalSchema('next usable') },
  { title: 'PolicyV3Nonce' },
);
export type PolicyV3NonceResponse = Static<typeof PolicyV3NonceSchema>;

const V3Fields = {
  action: Type.Enum(V3_ACTIONS),
  policy: Type.Optional(DeliveryPolicySchema),
  operator_did: Type.Optional(Type.String()),
};
export const PolicyV3PrepareBodySchema = Type.Object(
  { ...V3Fields, signer_key_id: Type.Optional(Type.String()), valid_until: Type.Optional(Type.Union([Type.String(), Type.Integer()])) },
  { title: 'PolicyV3PrepareBody' },
);
export const PolicyV3SubmitBodySchema = Type.Object({ ...V3Fields, ...SignedFields }, { title: 'PolicyV3SubmitBody' });

/** `POST /policies/v3/{scope}/{id}/prepare` 200 (§8.3). */
export const PolicyV3PrepareSchema = Type.Object(
  {
    action: Type.Enum(V3_ACTIONS),
    operation: Type.Enum(['SetPolicy', 'ClearPolicy']),
    extrinsic: Type.Literal('apply_policy_v3_with_proof'),
    scope: PolicyScopeSchema,
    operator_did: Type.String(),
    nonce_domain: Type.Literal('policy_v3_nonce'),
    nonce: DecimalSchema(),
    valid_until: DecimalSchema(),
    signer_key_id: Type.String(),
    policy: Type.Optional(DeliveryPolicySchema),
    ...PreparedFields,
    request: JsonObjectSchema,
  },
  { title: 'PolicyV3Prepare' },
);
export type PolicyV3PrepareResponse = Static<typeof PolicyV3PrepareSchema>;

/** 202 of a v3 write (§8.3). */
export const PolicyV3SubmitSchema = Type.Object(
  {
    ...AcceptedFields,
    scope: PolicyScopeSchema,
    operator_did: Type.String(),
    action: Type.Enum(V3_ACTIONS),
    operation: Type.Enum(['SetPolicy', 'ClearPolicy']),
    policy_id: Type.Optional(Type.String({ description: 'SetPolicy only' })),
    revision: Type.Optional(Type.Integer({ description: 'SetPolicy only' })),
    nonce_domain: Type.Literal('policy_v3_nonce'),
    nonce: DecimalSchema(),
  },
  { title: 'PolicyV3Submit' },
);
export type PolicyV3SubmitResponse = Static<typeof PolicyV3SubmitSchema>;
