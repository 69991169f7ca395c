/**
 * What one ledger call changed, for the history routes: the key that signed it and the fields it set, decoded
 * from the call's arguments and, for the calls that carry one, its signed payload. Pure; nothing here reads state.
 */
import { to0x } from '../base/bytes.js';
import type { Call } from '../ledger/extrinsic.js';
import { documentHash, decodeDocument, serviceToJson, vmToJson } from '../protocol/document.js';
import { decodeControlPayload, type ControlAction } from '../protocol/payloads/control.js';
import { decodePersonaPayload, type PersonaOperation } from '../protocol/payloads/persona.js';
import { decodePolicyV2Payload, type PolicyV2Operation } from '../protocol/payloads/policy-v2.js';
import { decodePolicyV3Payload, policyV3ScopeOf } from '../protocol/payloads/policy-v3.js';
import { APPLICATION_STATUSES } from '../protocol/payloads/application.js';
import { scopeToJson } from '../protocol/policy/json-render.js';
import type { PolicyScopeV3 } from '../protocol/policy/types.js';

type Json = Record<string, unknown>;

export interface CallDetails {
  /** The key id that authorised the call; null when the DID's root key signed it (registration). */
  signerKeyId: string | null;
  /** The fields the call set, snake_case. */
  changes: Json;
  /** The policy scope a policy call addresses (history filters persona and application scopes by it). */
  scope?: PolicyScopeV3;
}

function controlChanges(a: ControlAction): Json {
  switch (a.kind) {
    case 'AddDevice':
    case 'TombstoneDevice':
    case 'RemoveDevice':
      return { operation: a.kind, device_id: a.deviceId };
    case 'UpdateDevice':
      return { operation: a.kind, old_device_id: a.oldDeviceId, new_device_id: a.newDeviceId };
    case 'SetDeliveryPolicyLinks':
      return {
        operation: a.kind,
        recipient_policy: a.links.recipientPolicy,
        tag_policies: [...a.links.tagPolicies],
        persona_policies: [...a.links.personaPolicies],
      };
    default:
      return { operation: a.kind };
  }
}

function personaChanges(op: PersonaOperation): Json {
  const out: Json = { operation: op.kind, persona: op.persona };
  if ('controllerKeyIds' in op) Object.assign(out, { controller_key_ids: [...op.controllerKeyIds], controller_threshold: op.controllerThreshold });
  if (op.kind === 'Transfer') {
    Object.assign(out, {
      new_operator_did: op.newOperatorDid,
      controller_key_ids: [...op.newControllerKeyIds],
      controller_threshold: op.newControllerThreshold,
    });
  }
  return out;
}

function policyV2Scope(op: PolicyV2Operation): PolicyScopeV3 {
  switch (op.kind) {
    case 'SetPolicy':
      return op.policy.scope;
    case 'ClearPolicy':
      return op.scope;
    case 'SetDidConstraints':
      return { kind: 'Did', id: op.did };
    case 'SetPersonaConstraints':
      return { kind: 'Persona', id: op.persona };
  }
}

/** A policy payload's details; `undefined` payload (undecodable bytes) gives empty changes. */
function policyDetails(
  version: 2 | 3,
  p: { operatorDid: string; signerKeyId: string; operation: { kind: string } } | undefined,
  scope: PolicyScopeV3 | undefined,
  fallbackSigner: string,
): CallDetails {
  if (p === undefined || scope === undefined) return { signerKeyId: fallbackSigner, changes: {} };
  return {
    signerKeyId: p.signerKeyId,
    changes: { operation: p.operation.kind, policy_version: version, scope: scopeToJson(scope), operator_did: p.operatorDid },
    scope,
  };
}

/** The signer and changes of `call`. */
export function describeCall(call: Call): CallDetails {
  switch (call.name) {
    case 'register_with_proof_v2': {
      const a = call.args;
      let document: Json = {};
      try {
        document = { document_hash: to0x(documentHash(decodeDocument(a.docBlob))) };
      } catch {
        // an undecodable document never reached a block; keep the entry without it
      }
      return { signerKeyId: null, changes: { alias: a.alias, root_pubkey: to0x(a.rootPubkey), ...document } };
    }
    case 'set_document_with_proof_v2': {
      const a = call.args;
      let hash: Json = {};
      try {
        hash = { document_hash: to0x(documentHash(decodeDocument(a.docBlob))) };
      } catch {
        // as above
      }
      return { signerKeyId: a.signerKeyId, changes: { ...hash, document_nonce: a.documentNonce.toString() } };
    }
    case 'add_alias':
    case 'remove_alias':
      return { signerKeyId: call.args.signerKeyId, changes: { alias: call.args.alias } };
    case 'update_alias':
      return { signerKeyId: call.args.signerKeyId, changes: { old_alias: call.args.oldAlias, new_alias: call.args.newAlias } };
    case 'add_verification_method':
    case 'update_verification_method':
      return { signerKeyId: call.args.signerKeyId, changes: { verification_method: vmToJson(call.args.method) } };
    case 'remove_verification_method':
    case 'add_authentication':
    case 'remove_authentication':
      return { signerKeyId: call.args.signerKeyId, changes: { id: call.args.methodId } };
    case 'add_key_agreement':
    case 'update_key_agreement':
      return { signerKeyId: call.args.signerKeyId, changes: { key_agreement: vmToJson(call.args.keyAgreement) } };
    case 'remove_key_agreement':
      return { signerKeyId: call.args.signerKeyId, changes: { id: call.args.keyId } };
    case 'add_service':
    case 'update_service':
      return { signerKeyId: call.args.signerKeyId, changes: { service: serviceToJson(call.args.service) } };
    case 'remove_service':
      return { signerKeyId: call.args.signerKeyId, changes: { id: call.args.serviceId } };
    case 'update_root_pubkey':
      return { signerKeyId: call.args.signerKeyId, changes: { root_pubkey: to0x(call.args.newRootPubkey) } };
    case 'apply_control_with_proof': {
      const p = decodeControlPayload(call.args.signedPayload);
      return { signerKeyId: p?.signerKeyId ?? call.args.signerKeyId, changes: p ? controlChanges(p.action) : {} };
    }
    case 'apply_persona_with_proof': {
      const p = decodePersonaPayload(call.args.signedPayload);
      if (p === undefined) return { signerKeyId: call.args.signerKeyId, changes: {} };
      return { signerKeyId: p.signerKeyId, changes: { ...personaChanges(p.operation), operator_did: p.operatorDid } };
    }
    case 'apply_policy_v2_with_proof': {
      const p = decodePolicyV2Payload(call.args.signedPayload);
      return policyDetails(2, p, p && policyV2Scope(p.operation), call.args.signerKeyId);
    }
    case 'apply_policy_v3_with_proof': {
      const p = decodePolicyV3Payload(call.args.signedPayload);
      return policyDetails(3, p, p && policyV3ScopeOf(p.operation), call.args.signerKeyId);
    }
    case 'register_application':
      return { signerKeyId: call.args.signerKeyId, changes: { control_did: call.args.controlDid, status: 'active' } };
    case 'update_application':
      return { signerKeyId: call.args.signerKeyId, changes: { control_did: call.args.newControlDid } };
    case 'set_application_status':
      return { signerKeyId: call.args.signerKeyId, changes: { status: (APPLICATION_STATUSES[call.args.status] ?? '').toLowerCase() } };
    case 'set_application_domain':
      return { signerKeyId: call.args.signerKeyId, changes: { domain: call.args.domain } };
    case 'set_application_linked_did':
      return { signerKeyId: call.args.controlSignerKeyId, changes: { linked_did: call.args.linkedDid, enabled: call.args.enabled } };
  }
}
