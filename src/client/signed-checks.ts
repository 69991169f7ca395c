/**
 * Local checks of what the Directory prepared for persona, policy and application changes (http-api.md §7–§9):
 * the bytes to sign must decode strictly as the route's payload type and say what the caller asked for (subject,
 * operation, operator, signer, nonce; for policies the very policy the caller wrote). Anything else is refused
 * before a signature is made.
 */
import { bytesEqual, parseHex } from '../base/bytes.js';
import { decodeApplicationAuthorization, type ApplicationAuthorization } from '../protocol/payloads/application.js';
import {
  decodePersonaPayload,
  decodePersonaTransferAcceptancePayload,
  type PersonaOperation,
  type PersonaPayload,
  type PersonaTransferAcceptancePayload,
} from '../protocol/payloads/persona.js';
import { decodePolicyV2Payload, type PolicyV2Operation } from '../protocol/payloads/policy-v2.js';
import { decodePolicyV3Payload, type PolicyV3Operation } from '../protocol/payloads/policy-v3.js';
import { canonicalPersona } from '../protocol/persona-name.js';
import { encodePolicy } from '../protocol/policy/codec.js';
import { completePolicy, parsePolicyJsonV2, parsePolicyJsonV3 } from '../protocol/policy/json-parse.js';
import { policyIdV2, policyIdV3 } from '../protocol/policy/policy-id.js';
import type { DeliveryPolicy, PolicyScopeV3 } from '../protocol/policy/types.js';
import type { Profile } from '../protocol/profile.js';
import { PayloadCheckError } from './errors.js';

/** The prepared signing fields of §7–§9 responses. */
export interface PreparedBytes {
  payload_to_sign?: string;
  canonical_payload?: string;
}

function refuse(message: string): never {
  throw new PayloadCheckError(message);
}

/** The bytes to sign: `payload_to_sign` (`0x` hex), equal to `canonical_payload` when both are present. */
export function preparedBytes(p: PreparedBytes): Uint8Array {
  const sign = p.payload_to_sign ?? p.canonical_payload;
  const bytes = typeof sign === 'string' && sign.startsWith('0x') ? parseHex(sign) : undefined;
  if (bytes === undefined) refuse('the prepared payload is not 0x-hex');
  if (p.canonical_payload !== undefined && p.payload_to_sign !== undefined && p.canonical_payload.toLowerCase() !== p.payload_to_sign.toLowerCase()) {
    refuse('payload_to_sign differs from canonical_payload');
  }
  return bytes;
}

function same(what: string, got: unknown, want: unknown): void {
  if (want !== undefined && got !== want) refuse(`the prepared payload has ${what} ${String(got)}, expected ${String(want)}`);
}

/** What a persona payload must say. */
export interface ExpectedPersona {
  persona: string;
  kind: PersonaOperation['kind'];
  operatorDid?: string;
  signerKeyId?: string;
  nonce?: string;
  controllerKeyIds?: readonly string[];
}

/** Decodes and checks a `PersonaAuthorizationPayload` (ledger-rules.md §4.9). */
export function checkPersonaPayload(bytes: Uint8Array, want: ExpectedPersona): PersonaPayload {
  const p = decodePersonaPayload(bytes) ?? refuse('the prepared payload is not a persona authorization');
  same('operation', p.operation.kind, want.kind);
  same('persona', p.operation.persona, canonicalPersona(want.persona) ?? want.persona);
  same('operator_did', p.operatorDid, want.operatorDid);
  same('signer_key_id', p.signerKeyId, want.signerKeyId);
  same('nonce', p.nonce.toString(), want.nonce);
  const keys =
    'controllerKeyIds' in p.operation ? p.operation.controllerKeyIds : 'newControllerKeyIds' in p.operation ? p.operation.newControllerKeyIds : undefined;
  if (want.controllerKeyIds !== undefined && (keys === undefined || keys.join('\n') !== want.controllerKeyIds.join('\n'))) {
    refuse('the prepared payload names other controller keys');
  }
  return p;
}

/** Decodes and checks a transfer acceptance payload (ledger-rules.md §4.9.3) before the new operator signs it. */
export function checkTransferAcceptance(
  profile: Profile,
  bytes: Uint8Array,
  want: { persona: string; newOperatorDid: string; signerKeyId?: string },
): PersonaTransferAcceptancePayload {
  const a = decodePersonaTransferAcceptancePayload(bytes) ?? refuse('the acceptance payload does not decode');
  same('domain', a.domain, profile.personaTransferDomain);
  same('persona', a.persona, canonicalPersona(want.persona) ?? want.persona);
  same('new_operator_did', a.newOperatorDid, want.newOperatorDid);
  same('new operator signer', a.newOperatorSignerKeyId, want.signerKeyId);
  return a;
}

/** The policy the caller wrote, with the id computed locally and the revision the Directory chose. */
function expectedPolicy(profile: Profile, version: 2 | 3, json: unknown, revision: bigint): DeliveryPolicy {
  let draft;
  try {
    draft = version === 2 ? parsePolicyJsonV2(json, true) : parsePolicyJsonV3(json);
  } catch (e) {
    refuse(`the policy is invalid: ${e instanceof Error ? e.message : String(e)}`);
  }
  const id = version === 2 ? policyIdV2(profile, draft.scope as Extract<PolicyScopeV3, { kind: 'Did' | 'Persona' }>) : policyIdV3(profile, draft.scope);
  return completePolicy(draft, { policyId: id, revision });
}

/** What a policy payload must say. */
export interface ExpectedPolicy {
  kind: PolicyV2Operation['kind'] | PolicyV3Operation['kind'];
  operatorDid?: string;
  signerKeyId?: string;
  nonce?: string;
  /** The JSON policy the caller asked to set (SetPolicy). */
  policy?: unknown;
}

function checkPolicyCommon(
  profile: Profile,
  version: 2 | 3,
  p: { operatorDid: string; signerKeyId: string; nonce: bigint; operation: PolicyV2Operation | PolicyV3Operation },
  want: ExpectedPolicy,
): void {
  same('operation', p.operation.kind, want.kind);
  same('operator_did', p.operatorDid, want.operatorDid);
  same('signer_key_id', p.signerKeyId, want.signerKeyId);
  same('nonce', p.nonce.toString(), want.nonce);
  if (p.operation.kind === 'SetPolicy' && want.policy !== undefined) {
    const mine = expectedPolicy(profile, version, want.policy, p.operation.policy.revision);
    if (!bytesEqual(encodePolicy(mine), encodePolicy(p.operation.policy))) refuse('the prepared policy differs from the one given');
  }
}

/** Decodes and checks a v2 policy payload (ledger-rules.md §4.7). */
export function checkPolicyV2Payload(profile: Profile, bytes: Uint8Array, want: ExpectedPolicy): void {
  checkPolicyCommon(profile, 2, decodePolicyV2Payload(bytes) ?? refuse('the prepared payload is not a v2 policy authorization'), want);
}

/** Decodes and checks a v3 policy payload (ledger-rules.md §4.8). */
export function checkPolicyV3Payload(profile: Profile, bytes: Uint8Array, want: ExpectedPolicy): void {
  checkPolicyCommon(profile, 3, decodePolicyV3Payload(bytes) ?? refuse('the prepared payload is not a v3 policy authorization'), want);
}

/** Decodes and checks an application tuple (ledger-rules.md §4.10): domain, action, id, nonce and the given fields. */
export function checkApplicationPayload(
  profile: Profile,
  bytes: Uint8Array,
  want: Partial<ApplicationAuthorization> & { action: ApplicationAuthorization['action']; applicationId: string; nonce?: bigint },
): ApplicationAuthorization {
  const d = decodeApplicationAuthorization(bytes) ?? refuse('the prepared payload is not an application authorization');
  same('domain', d.domain, profile.applicationDomain);
  const got = d.authorization as unknown as Record<string, unknown>;
  for (const [k, v] of Object.entries(want)) {
    if (v === undefined) continue;
    if (got[k] !== v) refuse(`the prepared payload has ${k} ${String(got[k])}, expected ${String(v)}`);
  }
  return d.authorization;
}
