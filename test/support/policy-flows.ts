/**
 * Client-side delivery-policy flows against a test Directory (http-api.md §8): service DIDs with public
 * endpoints, JSON policy builders (§8.1), and prepare → sign → submit for the v2 and v3 routes.
 */
import assert from 'node:assert/strict';
import type { Ed25519KeyPair } from '../../src/crypto/ed25519.js';
import type { DirectoryHarness } from './directory-harness.js';
import { didOf, kaOf, kid, keyOf, registerDid, signHex, vmOf, type Reply } from './directory-flows.js';

type Body = Record<string, unknown>;
const enc = encodeURIComponent;

export type ServiceKind = 'Relay' | 'Cache' | 'Archive' | 'ApplicationControl';

export interface ServiceSpec {
  fragment: string;
  kind: ServiceKind;
  endpoints?: string[];
}

export interface ServiceDid {
  did: string;
  key: Ed25519KeyPair;
  /** Service id by fragment. */
  id(fragment: string): string;
}

/** Registers DID `seed` with VM `#key-1` (root key), key agreement `#ka-1` and the given services. */
export async function registerServiceDid(
  h: DirectoryHarness,
  seed: number,
  services: ServiceSpec[],
  opts: { keyAgreement?: boolean } = {},
): Promise<ServiceDid> {
  const did = didOf(seed, h.profile.p);
  const key = keyOf(seed);
  const document: Body = {
    id: did,
    verificationMethod: [vmOf(did, 'key-1', key)],
    authentication: [kid(did, 'key-1')],
    keyAgreement: opts.keyAgreement === false ? [] : [kaOf(did, 'ka-1', seed)],
    service: services.map((s) => ({
      id: kid(did, s.fragment),
      type: `${h.profile.P}${s.kind}Service`,
      serviceEndpoint: s.endpoints ?? [`https://${s.fragment}.node${seed}.net/ddn`],
    })),
  };
  await registerDid(h, seed, { did, key, document });
  return { did, key, id: (f) => kid(did, f) };
}

// ---------------------------------------------------------------- JSON builders (§8.1)

export const target = (s: ServiceDid, fragment: string, extra: Body = {}): Body => ({ service_did: s.did, service_id: s.id(fragment), ...extra });

export function forwardPlan(targets: Body[], stepId = 'fwd'): Body {
  return { type: 'DeliveryPlan/v1', entry_step: stepId, steps: [{ id: stepId, operation: 'Forward', targets }], transitions: [] };
}

export function storePlan(targets: Body[], desired = 1, required = 1, stepId = 'store'): Body {
  return {
    type: 'DeliveryPlan/v1',
    entry_step: stepId,
    steps: [{ id: stepId, operation: 'Store', targets, desired_replicas: desired, required_replicas: required }],
    transitions: [],
  };
}

export function rule(id: string, priority: number, action: Body, conditions: Body[] = [], overrides?: Body): Body {
  const r: Body = { id, priority, conditions, action };
  if (overrides !== undefined) r.constraint_overrides = overrides;
  return r;
}

/** An event-bound Send rule to `did` (what application policies may hold). */
export function sendRule(id: string, did: string): Body {
  return rule(
    id,
    1,
    {
      type: 'DeliveryPlan/v1',
      entry_step: 'notify',
      steps: [{ id: 'notify', operation: 'Send', recipient_did: did, payload_template: { recipient: { $from: '/event/recipient_did' }, kind: 'stored' } }],
      transitions: [],
    },
    [{ type: 'EventEquals', value: 'CacheStored' }],
  );
}

/** A v3 policy object (`policy_ttl_seconds` 120). */
export function policyJson(type: 'DID' | 'PERSONA' | 'APPLICATION', id: string, operatorDid: string, ruleset: Body[], extra: Body = {}): Body {
  return { scope: { type, id }, operator_did: operatorDid, policy_ttl_seconds: 120, ruleset, ...extra };
}

/** `policy` in its v2 form: without `policy_ttl_seconds`, a v3-only field that profile `platform` refuses in v2. */
export function asV2(policy: Body): Body {
  const { policy_ttl_seconds: _ttl, ...rest } = policy;
  return rest;
}

/** A v2 policy object (no `policy_ttl_seconds`: the ledger's v2 struct gets 60). */
export function policyJsonV2(type: 'DID' | 'PERSONA', id: string, operatorDid: string, ruleset: Body[], extra: Body = {}): Body {
  return asV2(policyJson(type, id, operatorDid, ruleset, extra));
}

export const constraintsOf = (o: Partial<Record<string, number>> = {}): Body => ({
  requested_cache_seconds: 86_400,
  max_http_envelope_bytes: 1_000_000,
  max_unchunked_message_bytes: 500_000,
  max_chunk_bytes: 100_000,
  max_replicas: 3,
  ...o,
});

// ---------------------------------------------------------------- v2

/** Method and URL of the v2 submit route of `action` for `subject` (a DID or a persona). */
export function v2Route(action: string, subject: string): { method: string; url: string } {
  const d = `/delivery-policies/dids/${enc(subject)}`;
  const p = `/delivery-policies/personas/${enc(subject)}`;
  switch (action) {
    case 'set_did_policy_v2':
      return { method: 'PUT', url: d };
    case 'clear_did_policy_v2':
      return { method: 'DELETE', url: d };
    case 'set_did_constraints':
      return { method: 'PUT', url: `${d}/constraints` };
    case 'set_persona_policy_v2':
      return { method: 'PUT', url: p };
    case 'clear_persona_policy_v2':
      return { method: 'DELETE', url: p };
    case 'set_persona_constraints':
      return { method: 'PUT', url: `${p}/constraints` };
    default:
      throw new Error(`no v2 route for ${action}`);
  }
}

export function prepareV2(h: DirectoryHarness, body: Body): Promise<Reply> {
  return h.call('POST', '/delivery-policies/prepare', body);
}

export interface PreparedWrite {
  prepared: Body;
  body: Body;
  route: { method: string; url: string };
}

/** v2 prepare (asserting 200) and the signed submit body. */
export async function preparedV2(h: DirectoryHarness, key: Ed25519KeyPair, body: Body): Promise<PreparedWrite> {
  const res = await prepareV2(h, body);
  assert.equal(res.status, 200, `prepare ${String(body.action)}: ${JSON.stringify(res.body)}`);
  const subject = (res.body.did ?? res.body.persona) as string;
  return {
    prepared: res.body,
    body: { ...(res.body.request as Body), signature: signHex(key, res.body.payload_to_sign as string) },
    route: v2Route(body.action as string, subject),
  };
}

/** prepare → sign → submit (asserting 202) → settle. */
export async function writeV2(h: DirectoryHarness, key: Ed25519KeyPair, body: Body): Promise<Body> {
  const p = await preparedV2(h, key, body);
  const res = await h.call(p.route.method, p.route.url, p.body);
  assert.equal(res.status, 202, `submit ${String(body.action)}: ${JSON.stringify(res.body)}`);
  h.settle();
  return res.body;
}

// ---------------------------------------------------------------- v3

export const v3Url = (scope: string, id: string): string => `/policies/v3/${scope}/${enc(id)}`;

export function prepareV3(h: DirectoryHarness, scope: string, id: string, body: Body): Promise<Reply> {
  return h.call('POST', `${v3Url(scope, id)}/prepare`, body);
}

export async function preparedV3(h: DirectoryHarness, key: Ed25519KeyPair, scope: string, id: string, body: Body): Promise<PreparedWrite> {
  const res = await prepareV3(h, scope, id, body);
  assert.equal(res.status, 200, `prepare ${String(body.action)}: ${JSON.stringify(res.body)}`);
  return {
    prepared: res.body,
    body: { ...(res.body.request as Body), signature: signHex(key, res.body.payload_to_sign as string) },
    route: { method: body.action === 'clear_policy_v3' ? 'DELETE' : 'PUT', url: v3Url(scope, id) },
  };
}

export async function writeV3(h: DirectoryHarness, key: Ed25519KeyPair, scope: string, id: string, body: Body): Promise<Body> {
  const p = await preparedV3(h, key, scope, id, body);
  const res = await h.call(p.route.method, p.route.url, p.body);
  assert.equal(res.status, 202, `submit ${String(body.action)}: ${JSON.stringify(res.body)}`);
  h.settle();
  return res.body;
}
