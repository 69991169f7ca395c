/** Ledger error name → HTTP code (http-api.md §1.1). The Directory adds context the ledger does not carry. */
import { DdnError, type ErrorCode } from '../base/errors.js';
import type { LedgerFailure } from '../ledger/errors.js';
import { SCOPE_UNAVAILABLE_CAUSES } from '../ledger/runtime/scope-owner.js';
import { MAX_DID_BYTES } from '../protocol/did.js';

const NONCE_DOMAINS: Record<string, string> = {
  InvalidAliasNonce: 'alias_nonce',
  InvalidDocumentNonce: 'document_nonce',
  InvalidRootPubkeyNonce: 'root_pubkey_nonce',
  InvalidControlNonce: 'control_nonce',
  InvalidPolicyV2Nonce: 'policy_nonce',
  InvalidPolicyV3Nonce: 'policy_v3_nonce',
  InvalidPersonaOperatorNonce: 'operator_nonce',
  InvalidPersonaNonce: 'persona_nonce',
};

const POLICY_ERRORS = new Set([
  'InvalidPolicyId',
  'InvalidPolicyTtl',
  'EmptyRuleset',
  'DuplicateRuleId',
  'InvalidRulePriority',
  'InvalidTag',
  'InvalidCondition',
  'InvalidDeliveryPlan',
  'DuplicateStepId',
  'DeliveryPlanCycle',
  'InvalidRouteTarget',
  'MultipleForwardSteps',
  'ConstraintOverrideExceedsScope',
  'PolicyTooComplex',
  'InvalidCallDomain',
  'InvalidPayloadTemplate',
  'InvalidTtl',
  'MaxMessageSizeExceeded',
  'InvalidReplication',
  'HeaderPreviewTooLarge',
  'ReleaseFeeTooLarge',
  'EmptyPolicyDocument',
  'PolicyRevisionOverflow',
]);

const DOCUMENT_STRUCTURE = new Set([
  'InvalidDocument',
  'VerificationMethodAlreadyExists',
  'VerificationMethodNotFound',
  'AuthenticationAlreadyExists',
  'KeyAgreementAlreadyExists',
  'ServiceAlreadyExists',
]);

const SCOPE_CAUSES = new Set<string>(SCOPE_UNAVAILABLE_CAUSES);

const DIRECT: Record<string, ErrorCode> = {
  MalformedExtrinsic: 'invalid_request',
  PoolFull: 'too_many_pending',
  OrderUnavailable: 'chain_unavailable',
  InvalidSignature: 'invalid_signature',
  SignatureMismatch: 'invalid_signature',
  InvalidRootPubkey: 'invalid_root_pubkey',
  InvalidAliasPayload: 'canonical_payload_mismatch',
  InvalidDocumentPayload: 'canonical_payload_mismatch',
  InvalidRootPubkeyPayload: 'canonical_payload_mismatch',
  InvalidControlPayload: 'canonical_payload_mismatch',
  InvalidPolicyV2Payload: 'canonical_payload_mismatch',
  InvalidPolicyV3Payload: 'canonical_payload_mismatch',
  InvalidPersonaPayload: 'canonical_payload_mismatch',
  InvalidPolicyPayload: 'canonical_payload_mismatch',
  AliasAuthorizationExpired: 'authorization_expired',
  DocumentAuthorizationExpired: 'authorization_expired',
  RootPubkeyAuthorizationExpired: 'authorization_expired',
  ControlAuthorizationExpired: 'authorization_expired',
  PolicyAuthorizationExpired: 'authorization_expired',
  RegistrationExpired: 'authorization_expired',
  RegistrationExpiryTooFar: 'invalid_expiry',
  DidTooLong: 'invalid_did',
  InvalidDidFormat: 'invalid_did',
  DidAlreadyExists: 'did_already_exists',
  DidNotFound: 'did_not_found',
  DidDeactivated: 'did_deactivated',
  DidAlreadyDeactivated: 'did_deactivated',
  DidControlsApplication: 'did_controls_application',
  DidDeleted: 'did_deleted',
  PolicyLinksRemoved: 'policy_links_removed',
  PolicyRefTooLong: 'policy_links_removed',
  TooManyPolicyRefs: 'policy_links_removed',
  InvalidAlias: 'invalid_alias',
  AliasTooLong: 'invalid_alias',
  AliasTaken: 'alias_taken',
  AliasAlreadyExists: 'alias_already_exists',
  TooManyAliases: 'too_many_aliases',
  AliasNotFound: 'alias_not_found',
  TooManyDevices: 'too_many_devices',
  DeviceNotFound: 'device_not_found',
  DeviceAlreadyExists: 'device_already_exists',
  InvalidDocument: 'invalid_document',
  VerificationMethodAlreadyExists: 'verification_method_already_exists',
  VerificationMethodNotFound: 'verification_method_not_found',
  VerificationMethodInUse: 'verification_method_in_use',
  AuthenticationAlreadyExists: 'authentication_already_exists',
  AuthenticationNotFound: 'authentication_not_found',
  KeyAgreementAlreadyExists: 'key_agreement_already_exists',
  KeyAgreementNotFound: 'key_agreement_not_found',
  ServiceAlreadyExists: 'service_already_exists',
  ServiceTooLong: 'too_many_services',
  ServiceNotFound: 'service_not_found',
  PolicyNotFound: 'policy_not_found',
  InvalidConstraints: 'invalid_delivery_constraints',
  InvalidPersona: 'invalid_persona',
  PersonaAlreadyExists: 'persona_already_exists',
  PersonaNotFound: 'persona_not_found',
  PersonaInactive: 'persona_inactive',
  PersonaVerificationExpired: 'persona_verification_expired',
  InvalidPersonaController: 'invalid_persona_controller',
  InvalidPersonaAttestation: 'invalid_persona_attestation',
  PersonaAttestorNotApproved: 'persona_attestor_not_approved',
  InvalidPolicyRevision: 'policy_revision_conflict',
  InvalidApplicationId: 'invalid_application_id',
  ApplicationAlreadyExists: 'application_already_exists',
  ApplicationNotFound: 'application_not_found',
  ControlDidNotFound: 'control_did_not_found',
  InvalidAuthorization: 'invalid_signature',
  AuthorizationNonceOverflow: 'nonce_overflow',
  RevisionOverflow: 'revision_overflow',
  TooManyApplicationsForControlDid: 'too_many_applications',
  ApplicationTombstoned: 'application_tombstoned',
  InvalidStatusTransition: 'invalid_status_transition',
  InvalidDomain: 'invalid_domain',
  DomainNotControlled: 'domain_not_controlled',
  LinkedDidNotFound: 'linked_did_not_found',
  TooManyLinkedDids: 'too_many_linked_dids',
  NotDidOwner: 'forbidden',
  NotPolicyController: 'forbidden',
  LegacyPolicyDeprecated: 'legacy_policy_deprecated',
};

export interface LedgerErrorContext {
  /** Registration and document replacement: document-structure failures are `invalid_document`. */
  fullDocument?: boolean;
  /** The nonce the request used, for `nonce_mismatch` details. */
  receivedNonce?: bigint;
  /** The current nonce, for `nonce_mismatch` details. */
  expectedNonce?: bigint;
  /** True when the record named by `did_not_found` exists but is deactivated (→ 409 `did_deactivated`). */
  didIsDeactivated?: boolean;
}

/** The code for a ledger error name (§1.1); unknown names are `chain_submission_rejected`. */
export function codeForLedgerError(name: string, reason?: string, ctx: LedgerErrorContext = {}): ErrorCode {
  if (ctx.fullDocument && DOCUMENT_STRUCTURE.has(name)) return 'invalid_document';
  if (NONCE_DOMAINS[name]) return 'nonce_mismatch';
  if (POLICY_ERRORS.has(name)) return 'invalid_delivery_policy';
  if (name === 'DidNotFound' && ctx.didIsDeactivated) return 'did_deactivated';
  if (name === 'InvalidPolicyScope') {
    if (reason === 'application_rule_forbidden' || reason === 'send_target_not_consented') return 'invalid_delivery_policy';
    // scope_unavailable:<cause> — the Directory reports the cause (http-api.md §1.1)
    const cause = reason?.startsWith('scope_unavailable:') ? reason.slice('scope_unavailable:'.length) : undefined;
    if (cause && SCOPE_CAUSES.has(cause)) return cause as ErrorCode;
    return 'invalid_policy_scope';
  }
  return DIRECT[name] ?? 'chain_submission_rejected';
}

/** A DdnError for a ledger rejection, with `details.ledger_error` and, for nonces, the domain. */
export function ledgerError(f: LedgerFailure, ctx: LedgerErrorContext = {}): DdnError {
  const code = codeForLedgerError(f.errorName, f.reason, ctx);
  const details: Record<string, unknown> = { ledger_error: f.errorName };
  if (f.reason) details.reason = f.reason;
  if (f.errorName === 'DidTooLong') Object.assign(details, { reason: 'too_long', max_bytes: MAX_DID_BYTES });
  const domain = NONCE_DOMAINS[f.errorName];
  let message = `ledger rejected the change: ${f.errorName}`;
  if (domain) {
    details.nonce_domain = domain;
    if (ctx.expectedNonce !== undefined) details.expected = ctx.expectedNonce.toString();
    if (ctx.receivedNonce !== undefined) details.received = ctx.receivedNonce.toString();
    if (ctx.expectedNonce !== undefined && ctx.receivedNonce !== undefined) {
      message = `${domain} is ${ctx.expectedNonce}, request used ${ctx.receivedNonce}`;
    }
  }
  if (code === 'invalid_delivery_policy' && !f.reason) {
    details.reason = f.errorName.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
  }
  // §1.1: where in the policy the validation failed, when the ledger knows it
  if (f.detail?.ruleId !== undefined) details.rule_id = f.detail.ruleId;
  if (f.detail?.stepId !== undefined) details.step_id = f.detail.stepId;
  return new DdnError(code, message, details);
}

/** The `{code, message, ledger_error}` object of a failed transaction (§3.4). */
export function txErrorBody(e: { name: string; reason?: string }, ctx: LedgerErrorContext = {}) {
  const code = codeForLedgerError(e.name, e.reason, ctx);
  return { code, message: `ledger rejected the change: ${e.name}`, ledger_error: e.name };
}

/** Every code {@link codeForLedgerError} can give: what a write the ledger checks can be refused with. */
export const LEDGER_CODES: readonly ErrorCode[] = [
  ...new Set<ErrorCode>([
    'invalid_document',
    'nonce_mismatch',
    'invalid_delivery_policy',
    'did_deactivated',
    'invalid_policy_scope',
    'chain_submission_rejected',
    ...([...SCOPE_CAUSES] as ErrorCode[]),
    ...Object.values(DIRECT),
  ]),
];
