/**
 * Client-side flows against a test Directory (http-api.md §4, §5): fixed-seed keys, deterministic DIDs and
 * documents, prepare → sign → submit for registration and for every DID mutation of the §5.1 table.
 */
import assert from 'node:assert/strict';
import { base58 } from '@scure/base';
import { parseHex, to0x, toBase64 } from '../../src/base/bytes.js';
import { keyPairFromSeed, type Ed25519KeyPair } from '../../src/crypto/ed25519.js';
import { normalizeAlias } from '../../src/protocol/alias.js';
import { documentHash } from '../../src/protocol/document.js';
import { parseDidDocument, parseService, parseVerificationMethod } from '../../src/protocol/document-json.js';
import { multibaseEd25519, multibaseX25519, parseRootPubkey } from '../../src/protocol/keys.js';
import { encodeAliasPayload } from '../../src/protocol/payloads/alias.js';
import { encodeControlPayload, type ControlAction } from '../../src/protocol/payloads/control.js';
import { encodeDocumentPatchPayload, type DocumentAction } from '../../src/protocol/payloads/document-patch.js';
import { documentReplacementSigningBytes, documentReplacementToken } from '../../src/protocol/payloads/document-replacement.js';
import { registrationSigningBytes } from '../../src/protocol/payloads/registration.js';
import { encodeRootKeyPayload } from '../../src/protocol/payloads/root-key.js';
import type { Profile } from '../../src/protocol/profile.js';
import type { DirectoryHarness } from './directory-harness.js';

type Body = Record<string, unknown>;
export type Reply = { status: number; body: Body };

/** The Ed25519 key of a fixed one-byte seed (32 copies of `seed`). */
export function keyOf(seed: number): Ed25519KeyPair {
  return keyPairFromSeed(new Uint8Array(32).fill(seed));
}

/** A deterministic DID for `seed` (`did:<p>:` + base58 of 16 bytes). */
export function didOf(seed: number, platform = 'platform'): string {
  return `did:${platform}:${base58.encode(new Uint8Array(16).fill(seed))}`;
}

/** `<did>#<fragment>`. */
export const kid = (did: string, fragment: string): string => `${did}#${fragment}`;

/** A verification method of `did` holding `key` (Ed25519, multibase with the `ed01` prefix). */
export function vmOf(did: string, fragment: string, key: Ed25519KeyPair): Body {
  return { id: kid(did, fragment), type: 'Ed25519VerificationKey2020', controller: did, publicKeyMultibase: multibaseEd25519(key.publicKey) };
}

/** An X25519 key agreement of `did` (the key bytes need not be a real X25519 key for the ledger). */
export function kaOf(did: string, fragment: string, seed: number): Body {
  return { id: kid(did, fragment), type: 'X25519KeyAgreementKey2020', controller: did, publicKeyMultibase: multibaseX25519(new Uint8Array(32).fill(seed)) };
}

/** The default registration document: one VM (`#key-1`, the root key) listed in `authentication`. */
export function docOf(did: string, key: Ed25519KeyPair): Body {
  return { id: did, verificationMethod: [vmOf(did, 'key-1', key)], authentication: [kid(did, 'key-1')] };
}

/** Signs the decoded `0x`-hex payload; Base64 signature as deployed clients send it. */
export function signHex(key: Ed25519KeyPair, payloadHex: string): string {
  const bytes = parseHex(payloadHex);
  assert.ok(bytes, `payload is not hex: ${payloadHex}`);
  return toBase64(key.sign(bytes));
}

export interface Registered {
  did: string;
  key: Ed25519KeyPair;
  document: Body;
  prepared: Body;
  submitted: Body;
}

export interface RegisterOptions {
  did?: string;
  key?: Ed25519KeyPair;
  document?: Body;
  alias?: string;
  expiryMs?: string;
  /** Leave the registration in the pool (default: settle). */
  pending?: boolean;
}

/** `POST /register-did/prepare` with the default document; asserts 200. */
export async function prepareRegistration(h: DirectoryHarness, seed: number, opts: RegisterOptions = {}) {
  const did = opts.did ?? didOf(seed, h.profile.p);
  const key = opts.key ?? keyOf(seed);
  const document = opts.document ?? docOf(did, key);
  const body: Body = { did, root_pubkey: multibaseEd25519(key.publicKey, false), did_document: document };
  if (opts.alias !== undefined) body.alias = opts.alias;
  if (opts.expiryMs !== undefined) body.expiry_ms = opts.expiryMs;
  const res = await h.call('POST', '/register-did/prepare', body);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { did, key, document, sent: body, prepared: res.body };
}

/** The submit body for a prepared registration: `request` + signature. */
export function registrationSubmitBody(prepared: Body, key: Ed25519KeyPair): Body {
  return { ...(prepared.request as Body), signature: signHex(key, prepared.payload_to_sign as string) };
}

/**
 * A signed `POST /register-did` body built by the client alone (no prepare): what someone who cannot prepare,
 * or who prepared elsewhere, submits. Expiry one minute after the harness clock.
 */
export function clientRegistrationBody(h: DirectoryHarness, did: string, key: Ed25519KeyPair): Body {
  const document = docOf(did, key);
  const expiryMs = BigInt(h.clock.nowMs() + 60_000);
  const bytes = registrationSigningBytes(h.profile, {
    did,
    rootPubkey: key.publicKey,
    alias: null,
    documentHash: documentHash(parseDidDocument(document, did)),
    expiryMs,
  });
  return {
    did,
    root_pubkey: multibaseEd25519(key.publicKey, false),
    did_document: document,
    timestamp: `v2:0:${expiryMs}`,
    signature: toBase64(key.sign(bytes)),
  };
}

/** prepare → sign → `POST /register-did` (202) → settle (unless `pending`). */
export async function registerDid(h: DirectoryHarness, seed: number, opts: RegisterOptions = {}): Promise<Registered> {
  const { did, key, document, prepared } = await prepareRegistration(h, seed, opts);
  const res = await h.call('POST', '/register-did', registrationSubmitBody(prepared, key));
  assert.equal(res.status, 202, JSON.stringify(res.body));
  if (!opts.pending) h.settle();
  return { did, key, document, prepared, submitted: res.body };
}

const enc = encodeURIComponent;

/** Method and URL of the submit route of `action` (§5.1 table) for a prepared `request`. */
export function submitRoute(action: string, did: string, request: Body): { method: string; url: string } {
  const d = `/dids/${enc(did)}`;
  const obj = (k: string) => (request[k] as Body | undefined) ?? {};
  switch (action) {
    case 'add_alias':
      return { method: 'POST', url: `${d}/aliases` };
    case 'update_alias':
      return { method: 'PATCH', url: `${d}/aliases/${enc(String(request.old_alias))}` };
    case 'remove_alias':
      return { method: 'DELETE', url: `${d}/aliases/${enc(String(request.alias))}` };
    case 'add_device':
      return { method: 'POST', url: `${d}/devices` };
    case 'update_device':
      return { method: 'PATCH', url: `${d}/devices/${enc(String(request.device_id))}` };
    case 'remove_device':
      return { method: 'DELETE', url: `${d}/devices/${enc(String(request.device_id))}` };
    case 'tombstone_device':
      return { method: 'POST', url: `${d}/devices/${enc(String(request.device_id))}/tombstone` };
    case 'deactivate_did':
      return { method: 'POST', url: `${d}/deactivate` };
    case 'delete_did':
      return { method: 'DELETE', url: d };
    case 'UpdateRootPubkey':
      return { method: 'PUT', url: `${d}/root-pubkey` };
    case 'AddVerificationMethod':
      return { method: 'POST', url: `${d}/document/verification-methods` };
    case 'UpdateVerificationMethod':
      return { method: 'PUT', url: `${d}/document/verification-methods/${enc(String(obj('verification_method').id))}` };
    case 'RemoveVerificationMethod':
      return { method: 'DELETE', url: `${d}/document/verification-methods/${enc(String(request.id))}` };
    case 'AddAuthentication':
      return { method: 'POST', url: `${d}/document/authentication` };
    case 'RemoveAuthentication':
      return { method: 'DELETE', url: `${d}/document/authentication/${enc(String(request.id))}` };
    case 'AddKeyAgreement':
      return { method: 'POST', url: `${d}/document/key-agreements` };
    case 'UpdateKeyAgreement':
      return { method: 'PUT', url: `${d}/document/key-agreements/${enc(String(obj('key_agreement').id))}` };
    case 'RemoveKeyAgreement':
      return { method: 'DELETE', url: `${d}/document/key-agreements/${enc(String(request.id))}` };
    case 'AddService':
      return { method: 'POST', url: `${d}/document/services` };
    case 'UpdateService':
      return { method: 'PUT', url: `${d}/document/services/${enc(String(obj('service').id))}` };
    case 'RemoveService':
      return { method: 'DELETE', url: `${d}/document/services/${enc(String(request.id))}` };
    case 'replace_document':
      return { method: 'PUT', url: `${d}/document/proof` };
    default:
      throw new Error(`no submit route for ${action}`);
  }
}

/** `POST /dids/{did}/prepare` with `{did, action, ...fields}`; returns the raw reply. */
export function prepare(h: DirectoryHarness, did: string, action: string, fields: Body = {}): Promise<Reply> {
  return h.call('POST', `/dids/${enc(did)}/prepare`, { did, action, ...fields });
}

export interface Prepared {
  prepared: Body;
  request: Body;
  /** `request` plus a valid signature: the exact body to submit. */
  body: Body;
  route: { method: string; url: string };
}

/** Prepares `action` (asserting 200) and signs it with `key`. */
export async function prepareSigned(h: DirectoryHarness, did: string, key: Ed25519KeyPair, action: string, fields: Body = {}): Promise<Prepared> {
  const res = await prepare(h, did, action, fields);
  assert.equal(res.status, 200, `prepare ${action}: ${JSON.stringify(res.body)}`);
  const request = res.body.request as Body;
  const body = { ...request, signature: signHex(key, res.body.payload_to_sign as string) };
  return { prepared: res.body, request, body, route: submitRoute(action, did, request) };
}

/** Submits a prepared change (optionally with a replaced body). */
export function submit(h: DirectoryHarness, p: Prepared, body: Body = p.body): Promise<Reply> {
  return h.call(p.route.method, p.route.url, body);
}

export interface Mutated extends Prepared {
  submitted: Body;
}

/** prepare → sign → submit (asserting 202) → settle (unless `pending`). */
export async function mutate(
  h: DirectoryHarness,
  did: string,
  key: Ed25519KeyPair,
  action: string,
  fields: Body = {},
  opts: { pending?: boolean } = {},
): Promise<Mutated> {
  const p = await prepareSigned(h, did, key, action, fields);
  const res = await submit(h, p);
  assert.equal(res.status, 202, `submit ${action}: ${JSON.stringify(res.body)}`);
  if (!opts.pending) h.settle();
  return { ...p, submitted: res.body };
}

export async function resolve(h: DirectoryHarness, did: string): Promise<Body> {
  const res = await h.call('GET', `/resolve/${enc(did)}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

export async function nonces(h: DirectoryHarness, did: string): Promise<Body> {
  const res = await h.call('GET', `/dids/${enc(did)}/nonces`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/** Asserts a §0.6 error body with `code` and the status. */
export function assertError(res: Reply, status: number, code: string): void {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status} ${JSON.stringify(res.body)}`);
  assert.equal(res.body.code, code);
  assert.equal(res.body.error, code);
  assert.equal(typeof res.body.message, 'string');
}

/** Asserts the 202 shape of §2.4 and returns `tx_hash`. */
export function assertAccepted(res: Reply, action?: string): string {
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.equal(res.body.status, 'accepted');
  assert.match(res.body.tx_hash as string, /^0x[0-9a-f]{64}$/);
  assert.equal(res.body.tx_id, res.body.tx_hash);
  assert.equal(typeof res.body.message, 'string');
  if (action !== undefined) assert.equal(res.body.action, action);
  return res.body.tx_hash as string;
}

// ---------------------------------------------------------------- local building with the shared codec

/** Every action of the §5.1 table. */
export const ALL_ACTIONS = [
  'add_alias',
  'update_alias',
  'remove_alias',
  'add_device',
  'update_device',
  'remove_device',
  'tombstone_device',
  'deactivate_did',
  'delete_did',
  'UpdateRootPubkey',
  'AddVerificationMethod',
  'UpdateVerificationMethod',
  'RemoveVerificationMethod',
  'AddAuthentication',
  'RemoveAuthentication',
  'AddKeyAgreement',
  'UpdateKeyAgreement',
  'RemoveKeyAgreement',
  'AddService',
  'UpdateService',
  'RemoveService',
  'replace_document',
] as const;
export type ActionName = (typeof ALL_ACTIONS)[number];

/** The nonce domain of each action (§5.1 table). */
export function nonceDomainOf(action: string): string {
  if (action.endsWith('_alias')) return 'alias_nonce';
  if (action.endsWith('_device') || action.endsWith('_did')) return 'control_nonce';
  if (action === 'UpdateRootPubkey') return 'root_pubkey_nonce';
  return 'document_nonce';
}

export interface SignParams {
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

function normAlias(v: unknown): string {
  const r = normalizeAlias(String(v));
  if (!r.ok) throw new Error(`bad alias in test: ${String(v)}`);
  return r.alias;
}

/**
 * The signed bytes of `action` built on the client side from the JSON action fields with the shared payload
 * codecs (ledger-rules.md §4.1–§4.4, §4.6) — never through the Directory's prepare route.
 */
export function buildPayload(profile: Profile, did: string, action: string, fields: Body, p: SignParams): Uint8Array {
  const tail = { nonce: p.nonce, validUntil: p.validUntil, signerKeyId: p.signerKeyId };
  const control = (a: ControlAction) => encodeControlPayload({ did, action: a, ...tail });
  const patch = (a: DocumentAction, part: Record<string, unknown>) =>
    encodeDocumentPatchPayload({ did, action: a, verificationMethod: null, keyAgreement: null, service: null, id: null, ...part, ...tail });
  const id = () => String(fields.id);
  switch (action) {
    case 'add_alias':
      return encodeAliasPayload({ did, action: 'Add', alias: normAlias(fields.alias), oldAlias: null, newAlias: null, ...tail });
    case 'remove_alias':
      return encodeAliasPayload({ did, action: 'Remove', alias: normAlias(fields.alias), oldAlias: null, newAlias: null, ...tail });
    case 'update_alias':
      return encodeAliasPayload({ did, action: 'Update', alias: null, oldAlias: normAlias(fields.old_alias), newAlias: normAlias(fields.new_alias), ...tail });
    case 'add_device':
      return control({ kind: 'AddDevice', deviceId: String(fields.device_id) });
    case 'remove_device':
      return control({ kind: 'RemoveDevice', deviceId: String(fields.device_id) });
    case 'tombstone_device':
      return control({ kind: 'TombstoneDevice', deviceId: String(fields.device_id) });
    case 'update_device':
      return control({ kind: 'UpdateDevice', oldDeviceId: String(fields.device_id), newDeviceId: String(fields.new_device_id) });
    case 'deactivate_did':
      return control({ kind: 'DeactivateDid' });
    case 'delete_did':
      return control({ kind: 'DeleteDid' });
    case 'UpdateRootPubkey': {
      const key = parseRootPubkey(String(fields.new_root_pubkey));
      if (!key) throw new Error('bad new_root_pubkey in test');
      return encodeRootKeyPayload({ did, newRootPubkey: key, ...tail });
    }
    case 'AddVerificationMethod':
    case 'UpdateVerificationMethod':
      return patch(action, { verificationMethod: parseVerificationMethod(fields.verification_method, did) });
    case 'AddKeyAgreement':
    case 'UpdateKeyAgreement':
      return patch(action, { keyAgreement: parseVerificationMethod(fields.key_agreement, did, 'key_agreement') });
    case 'AddService':
    case 'UpdateService':
      return patch(action, { service: parseService(fields.service) });
    case 'RemoveVerificationMethod':
    case 'AddAuthentication':
    case 'RemoveAuthentication':
    case 'RemoveKeyAgreement':
    case 'RemoveService':
      return patch(action, { id: id() });
    case 'replace_document':
      return documentReplacementSigningBytes(profile, {
        did,
        documentHash: documentHash(parseDidDocument(fields.document, did, 'document')),
        documentNonce: p.nonce,
        validUntil: p.validUntil,
        signerKeyId: p.signerKeyId,
      });
    default:
      throw new Error(`unknown action ${action}`);
  }
}

/** The action fields as a submit body carries them (aliases normalised, root keys as 0x hex). */
function requestFields(action: string, fields: Body): Body {
  const out: Body = { ...fields };
  for (const k of ['alias', 'old_alias', 'new_alias']) if (typeof out[k] === 'string') out[k] = normAlias(out[k]);
  if (action === 'UpdateRootPubkey' && typeof out.new_root_pubkey === 'string') {
    out.new_root_pubkey = to0x(parseRootPubkey(out.new_root_pubkey)!);
  }
  return out;
}

export interface LocalOptions {
  nonce: bigint;
  validUntil: bigint;
  signerKeyId?: string;
  /** Signing key (default `key`); the replacement `pubkey` stays the key of `signerKeyId`. */
  signWith?: Ed25519KeyPair;
  /** `hex` (default) or `base64` for canonical_payload and signature. */
  encoding?: 'hex' | 'base64';
}

/**
 * A complete submit body built locally: the action fields, nonce, valid_until, signer_key_id, the codec-built
 * canonical_payload and the signature over it (plus `timestamp` and `pubkey` for `replace_document`).
 */
export function localSubmission(
  profile: Profile,
  did: string,
  key: Ed25519KeyPair,
  action: string,
  fields: Body,
  o: LocalOptions,
): { body: Body; payload: Uint8Array; route: { method: string; url: string } } {
  const signerKeyId = o.signerKeyId ?? 'root';
  const payload = buildPayload(profile, did, action, fields, { nonce: o.nonce, validUntil: o.validUntil, signerKeyId });
  const sig = (o.signWith ?? key).sign(payload);
  const b64 = o.encoding === 'base64';
  const body: Body = {
    did,
    action,
    ...requestFields(action, fields),
    nonce: o.nonce.toString(),
    valid_until: o.validUntil.toString(),
    signer_key_id: signerKeyId,
    canonical_payload: b64 ? toBase64(payload) : to0x(payload),
    signature: b64 ? toBase64(sig) : to0x(sig),
  };
  if (action === 'replace_document') {
    body.timestamp = documentReplacementToken(o.nonce, o.validUntil);
    body.pubkey = to0x(key.publicKey);
  }
  return { body, payload, route: submitRoute(action, did, body) };
}

/** The DID's current pool nonce for an action's domain, from `GET /dids/{did}/nonces`. */
export async function nonceFor(h: DirectoryHarness, did: string, action: string): Promise<bigint> {
  return BigInt((await nonces(h, did))[nonceDomainOf(action)] as string);
}

// ---------------------------------------------------------------- a DID with one of everything

export interface Fixture extends Registered {
  /** Second key, held by VM `#key-2` (not in `authentication`). */
  key2: Ed25519KeyPair;
  alias: string;
  deviceId: string;
}

/**
 * A document with VMs `#key-1` (the root key, in `authentication`) and `#key-2`, key agreement `#ka-1` and
 * service `#svc-1`.
 */
export function richDocOf(did: string, key: Ed25519KeyPair, key2: Ed25519KeyPair): Body {
  return {
    id: did,
    verificationMethod: [vmOf(did, 'key-1', key), vmOf(did, 'key-2', key2)],
    authentication: [kid(did, 'key-1')],
    keyAgreement: [kaOf(did, 'ka-1', 1)],
    service: [
      {
        id: kid(did, 'svc-1'),
        type: 'PlatformRelayService',
        serviceEndpoint: ['https://relay.example/1'],
        authorization: [kid(did, 'key-1')],
        priority: 1,
      },
    ],
  };
}

/** Registers `seed` with the rich document and alias `fx<seed>`, then adds device `dev-1`; all settled. */
export async function registerFixture(h: DirectoryHarness, seed: number): Promise<Fixture> {
  const did = didOf(seed, h.profile.p);
  const key = keyOf(seed);
  const key2 = keyOf((seed + 100) % 256);
  const alias = `fx${seed}`;
  const r = await registerDid(h, seed, { did, key, document: richDocOf(did, key, key2), alias });
  await mutate(h, did, key, 'add_device', { device_id: 'dev-1' });
  return { ...r, key2, alias, deviceId: 'dev-1' };
}
