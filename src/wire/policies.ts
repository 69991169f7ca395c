/** Wire shapes of the delivery-policy routes (http-api.md §8.2 v2, §8.3 v3) as TypeBox schemas. */
import { Type, type Static, type TProperties, type TSchema } from 'typebox';
import {
  AcceptedFields,
  BlockRefFields,
  DecimalSchema,
  DeliveryConstraintsSchema,
  DeliveryPolicySchema,
  JsonObjectSchema,
  PolicyScopeSchema,
  PreparedFields,
  SignedSubmitFields,
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

const PrepareAuth = {
  signer_key_id: Type.Optional(Type.String({ description: 'default `root`' })),
  valid_until: Type.Optional(Type.Union([Type.String(), Type.Integer()], { description: 'default now + 300 s' })),
};

/** The fields of each v2 action (§8.2 table), besides the signed ones: `required` and `optional`. */
const V2_FIELDS = {
  set_did_policy_v2: { required: { did: Type.String(), policy: DeliveryPolicySchema }, optional: {} },
  clear_did_policy_v2: { required: { did: Type.String() }, optional: {} },
  set_did_constraints: { required: { did: Type.String(), delivery_constraints: DeliveryConstraintsSchema }, optional: {} },
  set_persona_policy_v2: {
    required: { persona: Type.String({ description: '= policy.scope.id after canonicalisation' }), policy: DeliveryPolicySchema },
    optional: { operator_did: Type.String({ description: '= policy.operator_did' }) },
  },
  clear_persona_policy_v2: { required: { persona: Type.String(), operator_did: Type.String() }, optional: {} },
  set_persona_constraints: {
    required: { persona: Type.String(), operator_did: Type.String(), delivery_constraints: DeliveryConstraintsSchema },
    optional: {},
  },
} as const satisfies Record<(typeof V2_ACTIONS)[number], { required: TProperties; optional: TProperties }>;
type V2ActionName = keyof typeof V2_FIELDS;

/** The body of the v2 write route of `action` (§8.2): its own fields, required as the table says. */
export function policyV2SubmitBodySchema<A extends V2ActionName>(action: A) {
  const f = V2_FIELDS[action];
  const optional = Type.Partial(Type.Object(f.optional)).properties;
  return Type.Object({ action: Type.Literal(action), ...f.required, ...optional, ...SignedSubmitFields }, { title: `PolicyV2SubmitBody_${action}` });
}

/**
 * `POST /delivery-policies/prepare` body (§8.2): one action's fields, `signer_key_id` and `valid_until` optional; a
 * persona's operator (clear, constraints) defaults to the persona's.
 */
export const PolicyV2PrepareBodySchema = Type.Union(
  V2_ACTIONS.map((action) => {
    const f = V2_FIELDS[action];
    const { operator_did: operator, ...required }: { operator_did?: TSchema } & typeof f.required = f.required;
    const optional = { ...f.optional, ...(operator === undefined ? {} : { operator_did: operator }) };
    return Type.Object(
      { action: Type.Literal(action), ...required, ...Type.Partial(Type.Object(optional)).properties, ...PrepareAuth },
      { title: `PolicyV2PrepareBody_${action}` },
    );
  }),
  { title: 'PolicyV2PrepareBody' },
);

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

const OwnerDid = { operator_did: Type.Optional(Type.String({ description: "the scope's owner (= policy.operator_did when setting)" })) };

/** `POST /policies/v3/{scope}/{id}/prepare` body (§8.3): a set with its policy, or a clear. */
export const PolicyV3PrepareBodySchema = Type.Union(
  [
    Type.Object({ action: Type.Literal('set_policy_v3'), policy: DeliveryPolicySchema, ...OwnerDid, ...PrepareAuth }, { title: 'PolicyV3PrepareBody_set' }),
    Type.Object({ action: Type.Literal('clear_policy_v3'), ...OwnerDid, ...PrepareAuth }, { title: 'PolicyV3PrepareBody_clear' }),
  ],
  { title: 'PolicyV3PrepareBody' },
);

/** `PUT /policies/v3/{scope}/{id}` body (§8.3). */
export const PolicyV3SetBodySchema = Type.Object(
  { action: Type.Literal('set_policy_v3'), policy: DeliveryPolicySchema, ...OwnerDid, ...SignedSubmitFields },
  { title: 'PolicyV3SetBody' },
);

/** `DELETE /policies/v3/{scope}/{id}` body (§8.3): no policy. */
export const PolicyV3ClearBodySchema = Type.Object(
  { action: Type.Literal('clear_policy_v3'), ...OwnerDid, ...SignedSubmitFields },
  { title: 'PolicyV3ClearBody' },
);

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
