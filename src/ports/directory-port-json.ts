/**
 * The wire form of DirectoryPort answers, used by the Directory's `GET /delivery-view/{did}` route [ddn-internal]
 * and by the HTTP implementation of the port, so a Relay or Cache in another process sees exactly what an
 * in-process one sees.
 */
import { parseHex, to0x } from '../base/bytes.js';
import { NETWORK_CONSTRAINTS, type DeliveryConstraints } from '../protocol/constraints.js';
import { documentToJson, type DidDocument, type Service, type VerificationMethod } from '../protocol/document.js';
import type { DeliveryView, DidView, PersonaState, PolicyView } from './directory-port.js';

type Json = Record<string, unknown>;

export function didViewToJson(v: DidView): Json {
  return { did: v.did, deactivated: v.deactivated, document: v.document ? documentToJson(v.document) : null, root_pubkey: to0x(v.rootPubkey) };
}

function constraintsToWire(c: DeliveryConstraints): Json {
  return { ...c };
}

function constraintsFromWire(j: unknown): DeliveryConstraints {
  const o = (j ?? {}) as Record<string, unknown>;
  const out = { ...NETWORK_CONSTRAINTS } as DeliveryConstraints;
  for (const k of Object.keys(out) as (keyof DeliveryConstraints)[]) if (typeof o[k] === 'number') out[k] = o[k] as number;
  return out;
}

export function deliveryViewToJson(v: DeliveryView): Json {
  return {
    recipient: didViewToJson(v.recipient),
    persona: v.persona,
    persona_state: v.personaState,
    policy: v.policy ? { ...v.policy, effectiveConstraints: constraintsToWire(v.policy.effectiveConstraints) } : null,
    effective_constraints: constraintsToWire(v.effectiveConstraints),
    block_number: v.blockNumber,
    block_hash: v.blockHash,
  };
}

function vmFromJson(j: Json): VerificationMethod {
  return { id: String(j.id), type: String(j.type), controller: String(j.controller), publicKeyMultibase: String(j.publicKeyMultibase) };
}

function serviceFromJson(j: Json): Service {
  const ep = j.serviceEndpoint;
  return {
    id: String(j.id),
    type: String(j.type),
    serviceEndpoint: Array.isArray(ep) ? ep.map(String) : [String(ep)],
    authorization: Array.isArray(j.authorization) ? j.authorization.map(String) : null,
    priority: typeof j.priority === 'number' ? j.priority : null,
  };
}

/** The JSON rendering of a stored document back to the struct (lenient: it was validated when written). */
export function documentFromJson(j: Json): DidDocument {
  const arr = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);
  const auth = Array.isArray(j.authentication) ? j.authentication.map(String) : [];
  const svc = arr(j.service).map(serviceFromJson);
  return {
    id: String(j.id),
    verificationMethod: arr(j.verificationMethod).map(vmFromJson),
    authentication: auth.length ? auth : null,
    keyAgreement: arr(j.keyAgreement).map(vmFromJson),
    service: svc.length ? svc : null,
  };
}

export function didViewFromJson(j: Json): DidView {
  return {
    did: String(j.did),
    deactivated: j.deactivated === true,
    document: j.document ? documentFromJson(j.document as Json) : null,
    rootPubkey: parseHex(String(j.root_pubkey)) ?? new Uint8Array(32),
  };
}

export function deliveryViewFromJson(j: Json): DeliveryView {
  const p = j.policy as (Json & { effectiveConstraints?: unknown }) | null;
  const policy: PolicyView | null = p ? { ...(p as unknown as PolicyView), effectiveConstraints: constraintsFromWire(p.effectiveConstraints) } : null;
  return {
    recipient: didViewFromJson(j.recipient as Json),
    persona: (j.persona as string | null) ?? null,
    personaState: (j.persona_state as PersonaState | null) ?? null,
    policy,
    effectiveConstraints: constraintsFromWire(j.effective_constraints),
    blockNumber: Number(j.block_number),
    blockHash: String(j.block_hash),
  };
}
