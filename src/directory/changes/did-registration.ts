/**
 * Change kind: DID registration, `POST /register-did/prepare` and `POST /register-did` (http-api.md §4). The
 * root key signs the registration payload with an expiry (a `v2:0:<expiry_ms>` token) instead of a nonce;
 * document-structure failures are `invalid_document`.
 */
import { to0x } from '../../base/bytes.js';
import { DdnError } from '../../base/errors.js';
import type { Call } from '../../ledger/extrinsic.js';
import { getAliasOwner, getDidRecord, isDeletedDid } from '../../ledger/records.js';
import { normalizeAlias } from '../../protocol/alias.js';
import { isDid } from '../../protocol/did.js';
import { checkDocumentStructure, documentHash, DOC, encodeDocument, type DidDocument } from '../../protocol/document.js';
import { assertServiceIdsOfDid, parseDidDocument } from '../../protocol/document-json.js';
import { parseRootPubkey } from '../../protocol/keys.js';
import type { Profile } from '../../protocol/profile.js';
import { parseV2Token, registrationSigningBytes, registrationToken } from '../../protocol/payloads/registration.js';
import type { DirectoryDeps } from '../deps.js';
import { parseSignature, parseU64Field } from '../request-fields.js';
import { DEFAULT_VALIDITY_MS, invalidDid } from '../submission.js';
import type { Reads } from '../../http/json-body.js';
import type { Unchecked } from '../../http/route.js';
import { defer, settle, type Deferred } from '../deferred.js';
import type { KindFields, Prepared, SubmitSteps, SyncPrepareSteps } from '../write-pipeline.js';
import type {
  RegistrationPrepareBodySchema,
  RegistrationPrepareResponse,
  RegistrationRequest,
  RegistrationSubmitBodySchema,
  RegistrationSubmitResponse,
} from '../../wire/directory-writes.js';
import type { DidDocumentJson } from '../../wire/json-forms.js';

const EXTRINSIC = 'register_with_proof_v2';
const REGISTRATION_WINDOW_MS = 3_600_000n;

interface Registration {
  did: string;
  /** `root_pubkey` as sent (echoed in the prepared `request`). */
  rootText: string;
  rootPubkey: Uint8Array;
  doc: DidDocument;
  blob: Uint8Array;
  alias: string | null;
}

function readRegistration(body: Reads<'did' | 'root_pubkey' | 'did_document' | 'alias'>, profile: Profile): Registration {
  const did = body.did;
  if (typeof did !== 'string' || !isDid(did)) throw invalidDid(did, 'did');
  const rootText = body.root_pubkey;
  const rootPubkey = typeof rootText === 'string' ? parseRootPubkey(rootText) : undefined;
  if (typeof rootText !== 'string' || !rootPubkey)
    throw new DdnError('invalid_root_pubkey', 'root_pubkey is not a 32-byte Ed25519 key', { field: 'root_pubkey' });
  const doc = parseDidDocument(body.did_document, did, 'did_document');
  if (!profile.acceptsDeployedClientForms) assertServiceIdsOfDid(doc.service, did, 'did_document.service');
  const blob = encodeDocument(doc);
  if (blob.length > DOC.maxDocBlobBytes) throw new DdnError('invalid_document', 'document too large', { reason: 'too_large' });
  const structural = checkDocumentStructure(doc, did);
  if (structural) throw new DdnError('invalid_document', `document structure: ${structural}`, { ledger_error: structural });
  let alias: string | null = null;
  if (body.alias !== undefined && body.alias !== null) {
    const r = typeof body.alias === 'string' ? normalizeAlias(body.alias) : ({ ok: false, error: 'InvalidAlias' } as const);
    if (!r.ok) throw new DdnError('invalid_alias', 'alias is invalid', { field: 'alias', ledger_error: r.error });
    alias = r.alias;
  }
  return { did, rootText, rootPubkey, doc, blob, alias };
}

function assertRegistrable(env: DirectoryDeps, { did, alias }: Registration): void {
  const pool = env.ledger.poolView();
  // An alias held by this very DID means the DID exists: that is did_already_exists (§2.2: a registration
  // resubmitted after inclusion fails with did_already_exists), not a lost alias race.
  const owner = alias === null ? undefined : getAliasOwner(pool, alias);
  if (owner !== undefined && owner !== did) throw new DdnError('alias_taken', 'alias is taken', { alias });
  if (getDidRecord(pool, did)) throw new DdnError('did_already_exists', 'DID already registered or pending', { did });
  if (isDeletedDid(pool, did)) throw new DdnError('did_deleted', 'this DID was deleted and can never be registered again', { did });
}

interface PreparedRegistration extends Prepared {
  expiryMs: bigint;
  hash: Uint8Array;
}

/** `POST /register-did/prepare`, as its route's parser reads it: the registration and the optional `expiry_ms`. */
export interface RegistrationPrepareInput extends Registration {
  /** The document as sent (`parseDidDocument` accepted it, so it has the wire form). */
  didDocument: DidDocumentJson;
  /** `expiry_ms` decoded; its refusal (`invalid_expiry`) comes after the pre-checks (§4.1 order). */
  expiry: Deferred<bigint> | undefined;
}

/** The request shape of `POST /register-did/prepare` (no state): the route's parser. */
export function parseRegistrationPrepare(profile: Profile, body: Unchecked<typeof RegistrationPrepareBodySchema>): RegistrationPrepareInput {
  const r = readRegistration(body, profile);
  const raw = body.expiry_ms;
  const expiry = raw === undefined ? undefined : defer(() => parseU64Field(raw, 'expiry_ms', 'invalid_expiry'));
  return { ...r, didDocument: body.did_document as DidDocumentJson, expiry };
}

/** `POST /register-did/prepare`: no dry run (nothing of the pool state beyond the pre-checks applies). */
export const PREPARE_DID_REGISTRATION: SyncPrepareSteps<
  DirectoryDeps,
  RegistrationPrepareInput,
  RegistrationPrepareInput,
  PreparedRegistration,
  RegistrationPrepareResponse
> = {
  read: (_env, r) => r,
  precheck: assertRegistrable,
  build(env, r) {
    const now = BigInt(env.clock.nowMs());
    let expiryMs = now + DEFAULT_VALIDITY_MS;
    if (r.expiry !== undefined) {
      expiryMs = settle(r.expiry);
      if (!(expiryMs > now && expiryMs <= now + REGISTRATION_WINDOW_MS)) {
        throw new DdnError('invalid_expiry', 'expiry_ms must be in (now, now + 1 h]', { field: 'expiry_ms' });
      }
    }
    const hash = documentHash(r.doc);
    const payload = registrationSigningBytes(env.profile, { did: r.did, rootPubkey: r.rootPubkey, alias: r.alias, documentHash: hash, expiryMs });
    return { payload, expiryMs, hash };
  },
  answer(_env, { did, rootText, didDocument, alias }, { payload, expiryMs, hash }) {
    const hex = to0x(payload);
    const request: RegistrationRequest = { did, root_pubkey: rootText, did_document: didDocument, timestamp: registrationToken(expiryMs) };
    if (alias !== null) request.alias = alias;
    return { request, payload_to_sign: hex, canonical_payload: hex, document_hash: to0x(hash), expiry_ms: expiryMs.toString(), extrinsic: EXTRINSIC };
  },
};

/** `POST /register-did`, as its route's parser reads it. */
export interface RegistrationSubmitInput extends Registration {
  expiryMs: bigint;
  /** The signature decoded; its refusal comes after every prepare check (§4.2 order). */
  signature: Deferred<Uint8Array>;
}

interface SignedRegistration extends Registration {
  expiryMs: bigint;
  signature: Uint8Array;
}

/** The request shape of `POST /register-did` (no state), in §4.2's order: the route's parser. */
export function parseRegistrationSubmit(profile: Profile, body: Unchecked<typeof RegistrationSubmitBodySchema>): RegistrationSubmitInput {
  const ts = body.timestamp;
  if (typeof ts !== 'string' || !ts.startsWith('v2:')) {
    if (typeof ts === 'string' && ts.length > 0) {
      throw new DdnError('legacy_registration_unsupported', 'only v2 registration tokens are accepted', { field: 'timestamp' });
    }
    throw new DdnError('invalid_timestamp_token', 'timestamp must be v2:0:<expiry_ms>', { field: 'timestamp' });
  }
  const token = parseV2Token(ts);
  if (!token || token.nonce !== 0n) throw new DdnError('invalid_timestamp_token', 'timestamp must be v2:0:<expiry_ms>', { field: 'timestamp' });
  const r = readRegistration(body, profile);
  return { ...r, expiryMs: token.ms, signature: defer(() => parseSignature(body.signature)) };
}

/** `POST /register-did`. */
export const SUBMIT_DID_REGISTRATION: SubmitSteps<DirectoryDeps, RegistrationSubmitInput, SignedRegistration, KindFields<RegistrationSubmitResponse>> = {
  read(env, r) {
    // §4.2 order: every prepare check (alias_taken, did_already_exists included) before the signature encoding;
    // an identical pending submission skips them (it is answered as a duplicate).
    if (!r.signature.ok) {
      assertRegistrable(env, r);
      throw r.signature.error;
    }
    return { ...r, signature: r.signature.value };
  },
  call: (r): Call => ({
    name: EXTRINSIC,
    args: { did: r.did, alias: r.alias, rootPubkey: r.rootPubkey, expiryMs: r.expiryMs, docBlob: r.blob, signature: r.signature },
  }),
  precheck: assertRegistrable,
  admission: (_env, r) => ({ subject: r.did, action: 'register_did', limitKey: `${r.did}|registration`, fullDocument: true }),
  answer: (r) => ({ did: r.did, registration_status: 'pending', extrinsic: EXTRINSIC }),
};
