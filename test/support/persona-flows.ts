/**
 * Client-side persona flows against a test Directory (http-api.md §7): operators with fixed-seed keys, DNS
 * challenges published in the test DNS server, verification, and prepare → sign → submit for every persona route.
 */
import assert from 'node:assert/strict';
import type { Ed25519KeyPair } from '../../src/crypto/ed25519.js';
import { startDirectory, type DirectoryHarness, type DirectoryOptions } from './directory-harness.js';
import { registerDid, signHex, type Reply } from './directory-flows.js';
import { startDnsServer, type TestDnsServer } from './dns-server.js';

type Body = Record<string, unknown>;

export const enc = encodeURIComponent;

export interface Operator {
  did: string;
  key: Ed25519KeyPair;
}

export interface PersonaNetwork {
  h: DirectoryHarness;
  dns: TestDnsServer;
  close(): Promise<void>;
}

/** A Directory whose resolver asks the loopback test DNS server. */
export async function startPersonaDirectory(deps: DirectoryOptions = {}): Promise<PersonaNetwork> {
  const dns = await startDnsServer();
  const h = await startDirectory({ deps: { dnsServers: [dns.server], dnsTimeoutMs: 2000, ...deps } });
  return {
    h,
    dns,
    async close() {
      await h.close();
      await dns.close();
    },
  };
}

/** Registers the DID of `seed` (root key = VM `#key-1`) and returns it as an operator. */
export async function operatorOf(h: DirectoryHarness, seed: number): Promise<Operator> {
  const r = await registerDid(h, seed);
  return { did: r.did, key: r.key };
}

export async function operatorNonce(h: DirectoryHarness, did: string): Promise<string> {
  const res = await h.call('GET', `/persona-operators/${enc(did)}/nonce`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.operator_nonce as string;
}

/** `POST /personas/{p}/dns-challenges` (raw reply). */
export function requestChallenge(h: DirectoryHarness, persona: string, body: Body): Promise<Reply> {
  return h.call('POST', `/personas/${enc(persona)}/dns-challenges`, body);
}

/** Creates a challenge (asserting 201). */
export async function createChallenge(h: DirectoryHarness, persona: string, operatorDid: string, action: string): Promise<Body> {
  const res = await requestChallenge(h, persona, { operator_did: operatorDid, action });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** Publishes the challenge's TXT record in the test DNS server. */
export function publish(dns: TestDnsServer, challenge: Body): void {
  dns.setTxt(challenge.record_name as string, challenge.record_value as string);
}

/** `POST …/verify` with the bound values and the challenge's operator nonce, plus `extra` (raw reply). */
export function verifyChallenge(h: DirectoryHarness, challenge: Body, extra: Body = {}): Promise<Reply> {
  return h.call('POST', `/personas/${enc(challenge.persona as string)}/dns-challenges/${challenge.challenge_id as string}/verify`, {
    operator_did: challenge.operator_did,
    action: challenge.action,
    nonce: challenge.operator_nonce,
    ...extra,
  });
}

/** Publishes and verifies (asserting 200). */
export async function verified(n: PersonaNetwork, challenge: Body, extra: Body = {}): Promise<Body> {
  publish(n.dns, challenge);
  const res = await verifyChallenge(n.h, challenge, extra);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/** The verified `request` plus the operator's signature over `payload_to_sign`. */
export function signedRequest(prepared: Body, key: Ed25519KeyPair): Body {
  return { ...(prepared.request as Body), signature: signHex(key, prepared.payload_to_sign as string) };
}

export function putPersona(h: DirectoryHarness, persona: string, body: Body): Promise<Reply> {
  return h.call('PUT', `/personas/${enc(persona)}`, body);
}

/** challenge → publish → verify → sign → `PUT /personas/{p}` (202) → settle. */
export async function registerDnsPersona(
  n: PersonaNetwork,
  persona: string,
  op: Operator,
  extra: Body = { controller_keys: ['root'] },
  action: 'register_persona' | 'renew_persona' = 'register_persona',
): Promise<{ challenge: Body; verification: Body; submitted: Body }> {
  const challenge = await createChallenge(n.h, persona, op.did, action);
  const verification = await verified(n, challenge, extra);
  const res = await putPersona(n.h, persona, signedRequest(verification, op.key));
  assert.equal(res.status, 202, JSON.stringify(res.body));
  n.h.settle();
  return { challenge, verification, submitted: res.body };
}

export function renewDnsPersona(n: PersonaNetwork, persona: string, op: Operator, extra: Body = {}) {
  return registerDnsPersona(n, persona, op, extra, 'renew_persona');
}

/** `POST /personas/{p}/prepare` (raw reply). */
export function prepareControl(h: DirectoryHarness, persona: string, body: Body): Promise<Reply> {
  return h.call('POST', `/personas/${enc(persona)}/prepare`, body);
}

/** Revoke or rotate: prepare (200) → sign → DELETE / PUT controllers (202) → settle. */
export async function controlPersona(h: DirectoryHarness, persona: string, op: Operator, body: Body): Promise<Body> {
  const prep = await prepareControl(h, persona, { operator_did: op.did, ...body });
  assert.equal(prep.status, 200, JSON.stringify(prep.body));
  const revoke = body.action === 'revoke_persona';
  const res = await h.call(revoke ? 'DELETE' : 'PUT', `/personas/${enc(persona)}${revoke ? '' : '/controllers'}`, signedRequest(prep.body, op.key));
  assert.equal(res.status, 202, JSON.stringify(res.body));
  h.settle();
  return res.body;
}

/** `POST /personas/{p}/named/prepare` (raw reply). */
export function prepareNamed(h: DirectoryHarness, persona: string, body: Body): Promise<Reply> {
  return h.call('POST', `/personas/${enc(persona)}/named/prepare`, { action: 'register_named_persona', ...body });
}

/** Named persona: prepare → sign → `PUT …/named` (202) → settle. */
export async function registerNamed(h: DirectoryHarness, persona: string, op: Operator, body: Body = {}): Promise<Body> {
  const prep = await prepareNamed(h, persona, { operator_did: op.did, controller_keys: ['root'], ...body });
  assert.equal(prep.status, 200, JSON.stringify(prep.body));
  const res = await h.call('PUT', `/personas/${enc(persona)}/named`, signedRequest(prep.body, op.key));
  assert.equal(res.status, 202, JSON.stringify(res.body));
  h.settle();
  return res.body;
}

/**
 * Transfer (§7.7): the new operator's challenge and verification, its signature over the acceptance payload,
 * the current operator's prepare and signature, `PUT …/transfer`. Returns the pieces (settled unless `pending`).
 */
export async function transferPersona(
  n: PersonaNetwork,
  persona: string,
  current: Operator,
  next: Operator,
  extra: Body = { controller_keys: ['root'] },
): Promise<{ verification: Body; prepared: Body; submitted: Body }> {
  const challenge = await createChallenge(n.h, persona, next.did, 'transfer_persona');
  const verification = await verified(n, challenge, extra);
  const newSig = signHex(next.key, verification.acceptance_payload as string);
  const prep = await n.h.call('POST', `/personas/${enc(persona)}/transfer/prepare`, {
    operator_did: current.did,
    challenge_id: challenge.challenge_id,
    new_operator_signature: newSig,
    signer_key_id: 'root',
  });
  assert.equal(prep.status, 200, JSON.stringify(prep.body));
  const res = await n.h.call('PUT', `/personas/${enc(persona)}/transfer`, signedRequest(prep.body, current.key));
  assert.equal(res.status, 202, JSON.stringify(res.body));
  n.h.settle();
  return { verification, prepared: prep.body, submitted: res.body };
}

export async function readPersona(h: DirectoryHarness, persona: string): Promise<Body> {
  const res = await h.call('GET', `/personas/${enc(persona)}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}
