/**
 * Builders for the policy, persona and application modules on top of the ledger harness: fixed-seed actors,
 * signed calls (v2, v3, persona, application), attestations by the genesis attestor (seed 9), and policy shapes.
 */
import assert from 'node:assert/strict';
import type { Ed25519KeyPair } from '../../src/crypto/ed25519.js';
import type { DidDocument, Service } from '../../src/protocol/document.js';
import {
  APPLICATION_STATUSES,
  encodeApplicationAuthorization,
  type ApplicationAuthorization,
  type ApplicationStatus,
} from '../../src/protocol/payloads/application.js';
import {
  dnsProofHash,
  ed25519MultiSignature,
  encodePersonaAttestationPayload,
  encodePersonaPayload,
  encodePersonaTransferAcceptancePayload,
  personaAttestationPayload,
  transferAcceptanceOf,
  type PersonaAttestationFields,
  type PersonaOperation,
} from '../../src/protocol/payloads/persona.js';
import { encodePolicyV2Payload, type PolicyV2Operation } from '../../src/protocol/payloads/policy-v2.js';
import { encodePolicyV3Payload, type PolicyV3Operation } from '../../src/protocol/payloads/policy-v3.js';
import { policyIdV2, policyIdV3 } from '../../src/protocol/policy/policy-id.js';
import type {
  DeliveryConstraintOverrides,
  DeliveryPolicyV2,
  DeliveryPolicyV3,
  DeliveryStep,
  DeliveryTransition,
  PolicyAction,
  PolicyCondition,
  PolicyRule,
  PolicyScopeV2,
  PolicyScopeV3,
  RequestedDeliveryConstraints,
  RouteTarget,
} from '../../src/protocol/policy/types.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { LedgerFailure } from '../../src/ledger/errors.js';
import type { Call } from '../../src/ledger/extrinsic.js';
import { getNonce } from '../../src/ledger/records.js';
import { defaultDocument, didOf, type Harness, metaOf, seedKey, attestor, T0, vmOf, type Signer } from './harness.js';

/** A validity far enough ahead that clock jumps in tests never expire an authorization by accident. */
export const FAR = BigInt(T0 + 400 * 86_400_000);
/** A DNS verification expiry a year after T0. */
export const EXPIRES = BigInt(T0 + 365 * 86_400_000);

export interface Actor {
  did: string;
  key: Ed25519KeyPair;
  root: Signer;
  /** A second VM key `#k2` (seed + 100). */
  k2: Signer;
}

export function actor(n: number): Actor {
  const did = didOf(n);
  const key = seedKey(n);
  return { did, key, root: { keyId: 'root', key }, k2: { keyId: `${did}#k2`, key: seedKey(n + 100) } };
}

/** Document with `#root` and `#k2` VMs and the given services (default: one cache service). */
export function documentOf(a: Actor, services?: Service[]): DidDocument {
  const base = defaultDocument(a.did, a.key);
  return {
    ...base,
    verificationMethod: [vmOf(a.did, 'root', a.key), vmOf(a.did, 'k2', a.k2.key)],
    service: services ?? base.service,
  };
}

export function svc(did: string, frag: string, type: string): Service {
  return { id: `${did}#${frag}`, type, serviceEndpoint: [`https://${frag}.example.net`], authorization: null, priority: null };
}

export function register(h: Harness, a: Actor, services?: Service[]): void {
  h.register(a.did, a.key, { doc: documentOf(a, services) });
}

// ---- failure assertions ----

/** The submission fails with `name` (and `reason`, when given) both in `check()` and at pool admission. */
export function expectFailure(h: Harness, call: Call, name: string, reason?: string): LedgerFailure {
  const f = h.ledger.check(call);
  assert.ok(f, `expected ${name}${reason ? ` (${reason})` : ''}, the call passed`);
  assert.equal(f.errorName, name, `error name (reason ${f.reason ?? '-'})`);
  if (reason !== undefined) assert.equal(f.reason, reason);
  const before = h.ledger.pendingEntries().length;
  assert.throws(
    () => h.ledger.submit(call, metaOf(call)),
    (e: unknown) => e instanceof LedgerFailure && e.errorName === name,
  );
  assert.equal(h.ledger.pendingEntries().length, before);
  return f;
}

// ---- signed proof calls ----

export interface SignOptions {
  nonce?: bigint;
  validUntil?: bigint;
  signer?: Signer;
  callSignerKeyId?: string;
  signature?: Uint8Array;
  signedPayload?: Uint8Array;
}

type ProofCall = 'apply_policy_v2_with_proof' | 'apply_policy_v3_with_proof' | 'apply_persona_with_proof';

function proofCall(name: ProofCall, payload: Uint8Array, signer: Signer, o: SignOptions): Call {
  const signedPayload = o.signedPayload ?? payload;
  return {
    name,
    args: {
      signedPayload,
      signature: o.signature ?? signer.key.sign(signedPayload),
      signerKeyId: o.callSignerKeyId ?? signer.keyId,
    },
  } as Call;
}

/** Policy v2 call; the nonce defaults to the operator's pool-state `policy_nonce`. */
export function v2Call(h: Harness, operator: Actor, operation: PolicyV2Operation, o: SignOptions = {}): Call {
  const signer = o.signer ?? operator.root;
  const payload = encodePolicyV2Payload({
    operatorDid: operator.did,
    operation,
    nonce: o.nonce ?? getNonce(h.ledger.poolView(), 'policy_nonce', operator.did),
    validUntil: o.validUntil ?? FAR,
    signerKeyId: signer.keyId,
  });
  return proofCall('apply_policy_v2_with_proof', payload, signer, o);
}

/** Policy v3 call signed as `operatorDid` (default: the actor); the nonce defaults to its `policy_v3_nonce`. */
export function v3Call(h: Harness, operator: Actor, operation: PolicyV3Operation, o: SignOptions & { operatorDid?: string } = {}): Call {
  const signer = o.signer ?? operator.root;
  const operatorDid = o.operatorDid ?? operator.did;
  const payload = encodePolicyV3Payload({
    operatorDid,
    operation,
    nonce: o.nonce ?? getNonce(h.ledger.poolView(), 'policy_v3_nonce', operatorDid),
    validUntil: o.validUntil ?? FAR,
    signerKeyId: signer.keyId,
  });
  return proofCall('apply_policy_v3_with_proof', payload, signer, o);
}

/** Persona call; the nonce defaults to the operator's `operator_nonce`. */
export function personaCall(h: Harness, operator: Actor, operation: PersonaOperation, o: SignOptions = {}): Call {
  const signer = o.signer ?? operator.root;
  const payload = encodePersonaPayload({
    operatorDid: operator.did,
    operation,
    nonce: o.nonce ?? getNonce(h.ledger.poolView(), 'operator_nonce', operator.did),
    validUntil: o.validUntil ?? FAR,
    signerKeyId: signer.keyId,
  });
  return proofCall('apply_persona_with_proof', payload, signer, o);
}

// ---- attestations ----

export interface AttestOptions {
  challengeNonce?: bigint;
  expiresAt?: bigint;
  attestorKey?: Ed25519KeyPair;
  /** Sign for another persona / operator than the one submitted. */
  signedPersona?: string;
  signedOperator?: string;
}

/** An attestation by the genesis attestor (seed 9) for (persona, operator), challenge = current persona nonce. */
export function attest(h: Harness, persona: string, operatorDid: string, o: AttestOptions = {}): PersonaAttestationFields {
  const key = o.attestorKey ?? attestor;
  const fields = {
    dnsProofHash: dnsProofHash(`_platform-persona.${persona}`, `platform-persona-verification=${persona}`),
    challengeNonce: o.challengeNonce ?? getNonce(h.ledger.poolView(), 'persona_nonce', persona),
    verificationExpiresAt: o.expiresAt ?? EXPIRES,
  };
  const msg = encodePersonaAttestationPayload(
    personaAttestationPayload(PLATFORM, {
      genesisHash: h.ledger.genesisHash,
      persona: o.signedPersona ?? persona,
      operatorDid: o.signedOperator ?? operatorDid,
      ...fields,
    }),
  );
  return { ...fields, attestor: key.publicKey, attestationSignature: ed25519MultiSignature(key.sign(msg)) };
}

export function registerOp(
  h: Harness,
  persona: string,
  operator: Actor,
  o: { controllers?: string[]; constraints?: RequestedDeliveryConstraints | null; attestation?: PersonaAttestationFields } = {},
): Extract<PersonaOperation, { kind: 'Register' }> {
  return {
    kind: 'Register',
    persona,
    controllerKeyIds: o.controllers ?? ['root'],
    controllerThreshold: 1,
    constraints: o.constraints ?? null,
    attestation: o.attestation ?? attest(h, persona, operator.did),
  };
}

/** Registers a DNS persona operated by `operator` (controllers `root` and `#k2`) and produces the block. */
export function registerPersona(
  h: Harness,
  persona: string,
  operator: Actor,
  o: { constraints?: RequestedDeliveryConstraints | null; expiresAt?: bigint } = {},
): void {
  const attestation = attest(h, persona, operator.did, o.expiresAt !== undefined ? { expiresAt: o.expiresAt } : {});
  h.apply(
    personaCall(h, operator, registerOp(h, persona, operator, { controllers: ['root', operator.k2.keyId], constraints: o.constraints ?? null, attestation })),
  );
}

/** A `Transfer` operation with the acceptance payload signed by `newOperator`'s `signer`. */
export function transferOp(
  h: Harness,
  persona: string,
  current: Actor,
  newOperator: Actor,
  o: { signer?: Signer; controllers?: string[]; constraints?: RequestedDeliveryConstraints | null; acceptanceKey?: Ed25519KeyPair } = {},
): Extract<PersonaOperation, { kind: 'Transfer' }> {
  const signer = o.signer ?? newOperator.root;
  const op: Extract<PersonaOperation, { kind: 'Transfer' }> = {
    kind: 'Transfer',
    persona,
    newOperatorDid: newOperator.did,
    newControllerKeyIds: o.controllers ?? [signer.keyId],
    newControllerThreshold: 1,
    constraints: o.constraints ?? null,
    attestation: attest(h, persona, newOperator.did),
    newOperatorSignerKeyId: signer.keyId,
    newOperatorSignature: new Uint8Array(64),
  };
  const acceptance = encodePersonaTransferAcceptancePayload(transferAcceptanceOf(PLATFORM, h.ledger.genesisHash, current.did, op));
  return { ...op, newOperatorSignature: (o.acceptanceKey ?? signer.key).sign(acceptance) };
}

// ---- applications ----

function appAuthBytes(auth: ApplicationAuthorization): Uint8Array {
  return encodeApplicationAuthorization(PLATFORM, auth);
}

const appNonce = (h: Harness, did: string) => getNonce(h.ledger.poolView(), 'application_nonce', did);

export function registerAppCall(h: Harness, id: string, control: Actor, o: { nonce?: bigint; signer?: Signer } = {}): Call {
  const signer = o.signer ?? control.root;
  const msg = appAuthBytes({ action: 'register', applicationId: id, controlDid: control.did, status: 'Active', nonce: o.nonce ?? appNonce(h, control.did) });
  return { name: 'register_application', args: { applicationId: id, controlDid: control.did, signerKeyId: signer.keyId, signature: signer.key.sign(msg) } };
}

export function updateAppCall(h: Harness, id: string, current: Actor, newControlDid: string, currentStatus: ApplicationStatus = 'Active'): Call {
  const msg = appAuthBytes({ action: 'update', applicationId: id, newControlDid, currentStatus, nonce: appNonce(h, current.did) });
  return { name: 'update_application', args: { applicationId: id, newControlDid, signerKeyId: 'root', signature: current.key.sign(msg) } };
}

export function statusAppCall(h: Harness, id: string, control: Actor, status: ApplicationStatus): Call {
  const msg = appAuthBytes({ action: 'status', applicationId: id, controlDid: control.did, newStatus: status, nonce: appNonce(h, control.did) });
  return {
    name: 'set_application_status',
    args: { applicationId: id, status: APPLICATION_STATUSES.indexOf(status), signerKeyId: 'root', signature: control.key.sign(msg) },
  };
}

export function domainAppCall(h: Harness, id: string, control: Actor, domain: string | null): Call {
  const msg = appAuthBytes({ action: 'domain', applicationId: id, controlDid: control.did, domain, nonce: appNonce(h, control.did) });
  return { name: 'set_application_domain', args: { applicationId: id, domain, signerKeyId: 'root', signature: control.key.sign(msg) } };
}

export function linkAppCall(h: Harness, id: string, control: Actor, linked: Actor, enabled: boolean, o: { linkedKey?: Ed25519KeyPair } = {}): Call {
  const msg = appAuthBytes({
    action: 'linked_did',
    applicationId: id,
    controlDid: control.did,
    linkedDid: linked.did,
    enabled,
    nonce: appNonce(h, control.did),
  });
  return {
    name: 'set_application_linked_did',
    args: {
      applicationId: id,
      linkedDid: linked.did,
      enabled,
      controlSignerKeyId: 'root',
      controlSignature: control.key.sign(msg),
      linkedSignerKeyId: 'root',
      linkedSignature: (o.linkedKey ?? linked.key).sign(msg),
    },
  };
}

// ---- policy shapes ----

export const target = (did: string, frag: string, p: Partial<RouteTarget> = {}): RouteTarget => ({
  serviceDid: did,
  serviceId: `${did}#${frag}`,
  priority: 0,
  weight: 1,
  ...p,
});

export const forward = (id: string, targets: RouteTarget[]): DeliveryStep => ({ id, operation: { kind: 'Forward', targets } });
export const archive = (id: string, targets: RouteTarget[]): DeliveryStep => ({ id, operation: { kind: 'Archive', targets } });
export const store = (id: string, targets: RouteTarget[], desired = 1, required = 1): DeliveryStep => ({
  id,
  operation: { kind: 'Store', targets, desiredReplicas: desired, requiredReplicas: required, selection: 'Priority' },
});
export const TEMPLATE: Uint8Array = new TextEncoder().encode('{"text":"hello","id":{"$from":"/envelope/message_id"}}');
export const send = (id: string, recipientDid: string, payloadTemplate: Uint8Array = TEMPLATE): DeliveryStep => ({
  id,
  operation: { kind: 'Send', recipientDid, payloadTemplate },
});
export const callStep = (id: string, serviceDid: string, frag: string, registeredDomain: string, payloadTemplate: Uint8Array = TEMPLATE): DeliveryStep => ({
  id,
  operation: { kind: 'Call', serviceDid, serviceId: `${serviceDid}#${frag}`, registeredDomain, payloadTemplate },
});
export const requireProfile = (id: string): DeliveryStep => ({ id, operation: { kind: 'RequireProfile' } });
export const edge = (
  from: string,
  to: string,
  trigger: DeliveryTransition['trigger'] = 'Success',
  mode: DeliveryTransition['mode'] = 'Next',
): DeliveryTransition => ({
  from,
  to,
  trigger,
  mode,
});

export function planAction(steps: DeliveryStep[], transitions: DeliveryTransition[] = [], entryStep = steps[0]?.id ?? 'a'): PolicyAction {
  return { kind: 'DeliveryPlanV1', plan: { entryStep, steps, transitions } };
}

export const BASE: PolicyAction = { kind: 'BaseDidDeliveryV1' };
export const reject = (reasonCode = 7): PolicyAction => ({ kind: 'RejectV1', reasonCode });

export function rule(
  id: string,
  priority = 10,
  action: PolicyAction = BASE,
  conditions: PolicyCondition[] = [],
  constraintOverrides: DeliveryConstraintOverrides | null = null,
): PolicyRule {
  return { id, priority, conditions, action, constraintOverrides };
}

export function overrides(o: Partial<DeliveryConstraintOverrides>): DeliveryConstraintOverrides {
  return {
    requestedCacheSeconds: null,
    maxHttpEnvelopeBytes: null,
    maxUnchunkedMessageBytes: null,
    maxChunkBytes: null,
    maxMessageBytes: null,
    maxChunks: null,
    maxReplicas: null,
    ...o,
  };
}

export function requested(o: Partial<RequestedDeliveryConstraints> = {}): RequestedDeliveryConstraints {
  return {
    requestedCacheSeconds: 3600,
    maxHttpEnvelopeBytes: 1_000_000,
    maxUnchunkedMessageBytes: 500_000,
    maxChunkBytes: 100_000,
    maxMessageBytes: 0,
    maxChunks: 0,
    maxReplicas: 2,
    ...o,
  };
}

export const didScope = (id: string): PolicyScopeV2 => ({ kind: 'Did', id });
export const personaScope = (id: string): PolicyScopeV2 => ({ kind: 'Persona', id });
export const appScope = (id: string): PolicyScopeV3 => ({ kind: 'Application', id });

export function policyV2(scope: PolicyScopeV2, operatorDid: string, ruleset: PolicyRule[], p: Partial<DeliveryPolicyV2> = {}): DeliveryPolicyV2 {
  return { policyId: policyIdV2(PLATFORM, scope), scope, revision: 1n, operatorDid, ruleset, policyTtlSeconds: 60, ...p };
}

export function policyV3(scope: PolicyScopeV3, operatorDid: string, ruleset: PolicyRule[], p: Partial<DeliveryPolicyV3> = {}): DeliveryPolicyV3 {
  return { policyId: policyIdV3(PLATFORM, scope), scope, revision: 1n, operatorDid, ruleset, policyTtlSeconds: 120, ...p };
}
