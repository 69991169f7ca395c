/**
 * Client-side application flows against a test Directory (http-api.md §9): registration and the authorization
 * actions, prepare → sign (control key, and linked key for link / unlink) → submit.
 */
import assert from 'node:assert/strict';
import type { Ed25519KeyPair } from '../../src/crypto/ed25519.js';
import type { DirectoryHarness } from './directory-harness.js';
import { signHex, type Reply } from './directory-flows.js';

type Body = Record<string, unknown>;

export const appUrl = (id: string, suffix = ''): string => `/applications/${encodeURIComponent(id)}${suffix}`;

export function prepareApplication(h: DirectoryHarness, id: string, body: Body): Promise<Reply> {
  return h.call('POST', appUrl(id, '/registration/prepare'), body);
}

/** The signed registration body from a prepare reply. */
export function registrationBody(prepared: Body, key: Ed25519KeyPair): Body {
  return { ...(prepared.request as Body), signature: signHex(key, prepared.payload_to_sign as string) };
}

/** prepare → sign → `PUT …/registration` (202) → settle. */
export async function registerApplication(h: DirectoryHarness, id: string, control: { did: string; key: Ed25519KeyPair }): Promise<Body> {
  const prep = await prepareApplication(h, id, { control_did: control.did, signer_key_id: 'root' });
  assert.equal(prep.status, 200, JSON.stringify(prep.body));
  const res = await h.call('PUT', appUrl(id, '/registration'), registrationBody(prep.body, control.key));
  assert.equal(res.status, 202, JSON.stringify(res.body));
  h.settle();
  return res.body;
}

export function prepareAuthorization(h: DirectoryHarness, id: string, body: Body): Promise<Reply> {
  return h.call('POST', appUrl(id, '/authorization/prepare'), body);
}

/** The signed authorization body: control signature, plus the linked DID's over the same bytes when given. */
export function authorizationBody(prepared: Body, control: Ed25519KeyPair, linked?: Ed25519KeyPair): Body {
  const body: Body = { ...(prepared.request as Body), control_signature: signHex(control, prepared.payload_to_sign as string) };
  if (linked) body.linked_signature = signHex(linked, prepared.payload_to_sign as string);
  return body;
}

/** prepare → sign → `PUT …/authorization` (202) → settle. */
export async function authorize(h: DirectoryHarness, id: string, body: Body, control: Ed25519KeyPair, linked?: Ed25519KeyPair): Promise<Body> {
  const prep = await prepareAuthorization(h, id, { control_signer_key_id: 'root', ...body });
  assert.equal(prep.status, 200, JSON.stringify(prep.body));
  const res = await h.call('PUT', appUrl(id, '/authorization'), authorizationBody(prep.body, control, linked));
  assert.equal(res.status, 202, JSON.stringify(res.body));
  h.settle();
  return res.body;
}
