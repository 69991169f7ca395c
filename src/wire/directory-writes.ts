/**
 * Wire shapes of DID registration and DID mutations (http-api.md §2.4, §4, §5) as TypeBox schemas: requests and
 * answers of `POST /register-did[/prepare]`, `POST /dids/{did}/prepare` and the §5.2 submit routes.
 */
import { Type, type Static, type TObject, type TProperties, type TSchema } from 'typebox';
import { AcceptedFields, DidDocumentSchema, PreparedFields, ServiceSchema, SignedFields, VerificationMethodSchema } from './json-forms.js';

/** `POST /register-did/prepare` body (§4.1). */
export const RegistrationPrepareBodySchema = Type.Object(
  {
    did: Type.String(),
    root_pubkey: Type.String({ description: '32-byte Ed25519 key (`z` + base58, `0x`-hex or Base64)' }),
    did_document: DidDocumentSchema,
    alias: Type.Optional(Type.String()),
    expiry_ms: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
  },
  { title: 'RegistrationPrepareBody' },
);
export type RegistrationPrepareBody = Static<typeof RegistrationPrepareBodySchema>;

/** The `request` of a registration preparation (§4.1): exactly these keys. */
export const RegistrationRequestSchema = Type.Object(
  {
    did: Type.String(),
    root_pubkey: Type.String(),
    did_document: DidDocumentSchema,
    timestamp: Type.String({ pattern: '^v2:0:[0-9]+$' }),
    alias: Type.Optional(Type.String()),
  },
  { title: 'RegistrationRequest' },
);
export type RegistrationRequest = Static<typeof RegistrationRequestSchema>;

/** `POST /register-did/prepare` 200 (§4.1). */
export const RegistrationPrepareSchema = Type.Object(
  {
    request: RegistrationRequestSchema,
    ...PreparedFields,
    document_hash: Type.String(),
    expiry_ms: Type.String({ pattern: '^[0-9]+$' }),
    extrinsic: Type.Literal('register_with_proof_v2'),
  },
  { title: 'RegistrationPrepare' },
);
export type RegistrationPrepareResponse = Static<typeof RegistrationPrepareSchema>;

/** `POST /register-did` body (§4.2): the prepared `request` plus `signature`. */
export const RegistrationSubmitBodySchema = Type.Object(
  { ...RegistrationRequestSchema.properties, signature: Type.String({ description: 'Ed25519 over payload_to_sign, Base64 or hex' }) },
  { title: 'RegistrationSubmitBody' },
);
export type RegistrationSubmitBody = Static<typeof RegistrationSubmitBodySchema>;

/** `POST /register-did` 202 (§4.2). */
export const RegistrationSubmitSchema = Type.Object(
  { ...AcceptedFields, did: Type.String(), registration_status: Type.Literal('pending'), message: Type.String() },
  { title: 'RegistrationSubmit' },
);
export type RegistrationSubmitResponse = Static<typeof RegistrationSubmitSchema>;

/** The action fields of every DID mutation (§5.1 table); which ones a route takes depends on its action. */
const ActionFields = {
  alias: Type.Optional(Type.String()),
  old_alias: Type.Optional(Type.String()),
  new_alias: Type.Optional(Type.String()),
  device_id: Type.Optional(Type.String()),
  new_device_id: Type.Optional(Type.String()),
  new_root_pubkey: Type.Optional(Type.String()),
  verification_method: Type.Optional(VerificationMethodSchema),
  key_agreement: Type.Optional(VerificationMethodSchema),
  service: Type.Optional(Type.Object({ ...ServiceSchema.properties, id: Type.Optional(Type.String()) })),
  id: Type.Optional(Type.String()),
  document: Type.Optional(DidDocumentSchema),
  timestamp: Type.Optional(Type.String({ description: 'replace_document: `v2:<nonce>:<valid_until>`' })),
  pubkey: Type.Optional(Type.String({ description: "replace_document: the signer's current public key" })),
};
/** The action fields of a mutation `request` (which ones depends on the action). */
export type MutationActionFields = Static<TObject<typeof ActionFields>>;

/** `POST /dids/{did}/prepare` body (§5.1). */
export const MutationPrepareBodySchema = Type.Object(
  {
    did: Type.Optional(Type.String({ description: 'the DID of the path when present (else 400 path_body_mismatch); may be omitted' })),
    action: Type.String({ description: 'add_alias, update_alias, …, AddService, replace_document (§5.1)' }),
    signer_key_id: Type.Optional(Type.String()),
    valid_until: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
    ...ActionFields,
  },
  { title: 'MutationPrepareBody' },
);
export type MutationPrepareBody = Static<typeof MutationPrepareBodySchema>;

/** The `request` of a mutation preparation: the exact body to submit, minus `signature` (§5.1). */
export const MutationRequestSchema = Type.Object(
  {
    did: Type.String(),
    action: Type.String(),
    nonce: Type.String(),
    valid_until: Type.String(),
    signer_key_id: Type.String(),
    canonical_payload: Type.String(),
    ...ActionFields,
  },
  { title: 'MutationRequest' },
);
export type MutationRequest = Static<typeof MutationRequestSchema>;

/** `POST /dids/{did}/prepare` 200 (§5.1). */
export const MutationPrepareSchema = Type.Object(
  {
    did: Type.String(),
    action: Type.String(),
    extrinsic: Type.String(),
    nonce_domain: Type.Enum(['alias_nonce', 'document_nonce', 'root_pubkey_nonce', 'control_nonce']),
    nonce: Type.String(),
    valid_until: Type.String(),
    signer_key_id: Type.String(),
    ...PreparedFields,
    schema_version: Type.Literal('1'),
    previous_version: Type.Integer(),
    request: MutationRequestSchema,
  },
  { title: 'MutationPrepare' },
);
export type MutationPrepareResponse = Static<typeof MutationPrepareSchema>;

/** The body of a §5.2 submit route: the prepared `request` plus `signature` (any action; the SDK's type). */
export const MutationSubmitBodySchema = Type.Object(
  { did: Type.String(), action: Type.String(), ...SignedFields, ...ActionFields },
  { title: 'MutationSubmitBody' },
);
export type MutationSubmitBody = Static<typeof MutationSubmitBodySchema>;

type ActionField = keyof typeof ActionFields;

/**
 * The action fields each §5.2 submit route takes (http-api.md §5.2 table): `required` ones, and `fromPath` ones the
 * path repeats (optional in the body: the Directory takes an absent one from the path, a differing one is 400
 * `path_body_mismatch`). `service.id` is required when adding a service, taken from the path when updating one.
 */
const SUBMIT_FIELDS: Readonly<Record<string, { required?: readonly ActionField[]; fromPath?: readonly ActionField[]; optional?: readonly ActionField[] }>> = {
  add_alias: { required: ['alias'] },
  update_alias: { required: ['new_alias'], fromPath: ['old_alias'] },
  remove_alias: { fromPath: ['alias'] },
  add_device: { required: ['device_id'] },
  update_device: { required: ['new_device_id'], fromPath: ['device_id'] },
  remove_device: { fromPath: ['device_id'] },
  tombstone_device: { fromPath: ['device_id'] },
  deactivate_did: {},
  delete_did: {},
  UpdateRootPubkey: { required: ['new_root_pubkey'] },
  AddVerificationMethod: { required: ['verification_method'] },
  UpdateVerificationMethod: { required: ['verification_method'] },
  RemoveVerificationMethod: { fromPath: ['id'] },
  AddAuthentication: { required: ['id'] },
  RemoveAuthentication: { fromPath: ['id'] },
  AddKeyAgreement: { required: ['key_agreement'] },
  UpdateKeyAgreement: { required: ['key_agreement'] },
  RemoveKeyAgreement: { fromPath: ['id'] },
  AddService: { required: ['service'] },
  UpdateService: { required: ['service'] },
  RemoveService: { fromPath: ['id'] },
  replace_document: { required: ['document', 'timestamp'], optional: ['pubkey'] },
};

/**
 * The properties of a §5.2 submit body: any action's (each route's schema holds its own action's fields, so a parser
 * typed by this union reads only fields some action's schema declares).
 */
type MutationSubmitProperties = { [K in keyof typeof MutationSubmitBodySchema.properties]: TSchema };

/** The body of the §5.2 submit route of `action`: its own fields only, required as the §5.2 table says. */
export function mutationSubmitBodySchema(action: string): TObject<MutationSubmitProperties> {
  const f = SUBMIT_FIELDS[action];
  if (f === undefined) throw new Error(`no submit fields for ${action}`);
  const pick = (names: readonly ActionField[] = []): TProperties => Object.fromEntries(names.map((n) => [n, ActionFields[n]]));
  const fields: TProperties = { ...Type.Required(Type.Object(pick(f.required))).properties, ...pick(f.fromPath), ...pick(f.optional) };
  // adding a service names it: the path gives no id
  if (action === 'AddService') fields.service = ServiceSchema;
  const schema = Type.Object({ did: Type.String(), action: Type.Literal(action), ...SignedFields, ...fields }, { title: `MutationSubmitBody_${action}` });
  // its properties are some of MutationSubmitBodySchema's, by name (the table picks them from ActionFields)
  return schema as TObject as TObject<MutationSubmitProperties>;
}

/** The 202 of a Directory change (§2.4); the subject field depends on the route. */
export const SubmitSchema = Type.Object(
  {
    ...AcceptedFields,
    did: Type.Optional(Type.String()),
    persona: Type.Optional(Type.String()),
    application_id: Type.Optional(Type.String()),
    action: Type.Optional(Type.String()),
    operation: Type.Optional(Type.String()),
    nonce_domain: Type.Optional(Type.String()),
    nonce: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
  },
  { title: 'Submit' },
);
export type SubmitResponse = Static<typeof SubmitSchema>;

/** A DID mutation's 202 (§5.2). */
export const MutationSubmitSchema = Type.Object(
  { ...AcceptedFields, did: Type.String(), action: Type.String(), nonce_domain: Type.String(), nonce: Type.String() },
  { title: 'MutationSubmit' },
);
export type MutationSubmitResponse = Static<typeof MutationSubmitSchema>;
