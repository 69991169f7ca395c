/**
 * A DID record as W3C DID Core sees it (docs/api.md "W3C DID Resolution"), as pure functions: the DID document
 * with the root key as verification method `<did>#root`, its JSON-LD contexts, the document metadata of a
 * version, and what a fragment or `?service=` selects.
 */
import type { DidRecord } from '../ledger/records.js';
import { documentToJson, emptyDocument } from '../protocol/document.js';
import { multibaseEd25519 } from '../protocol/keys.js';
import type { W3cDidDocumentJson, W3cDocumentMetadataJson } from '../wire/did-resolution.js';
import type { ServiceJson, VerificationMethodJson } from '../wire/json-forms.js';
import { ResolutionError, xmlDateTime } from './did-resolution.js';

/** A DID document in W3C's JSON representation (`@context` only in the JSON-LD one): the wire's declaration. */
export type W3cDidDocument = W3cDidDocumentJson;

/** W3C's DID document metadata of one version. */
export type W3cDocumentMetadata = W3cDocumentMetadataJson;

/** The fragment of the root key's verification method: ddn's `signer_key_id: "root"`. */
export const ROOT_FRAGMENT = 'root';

export const DID_V1_CONTEXT = 'https://www.w3.org/ns/did/v1';
/** The JSON-LD context of each key type ddn documents use (types not listed here add none). */
const TYPE_CONTEXTS: Record<string, string> = {
  Multikey: 'https://w3id.org/security/multikey/v1',
  Ed25519VerificationKey2020: 'https://w3id.org/security/suites/ed25519-2020/v1',
  Ed25519VerificationKey2018: 'https://w3id.org/security/suites/ed25519-2018/v1',
  X25519KeyAgreementKey2020: 'https://w3id.org/security/suites/x25519-2020/v1',
  X25519KeyAgreementKey2019: 'https://w3id.org/security/suites/x25519-2019/v1',
  JsonWebKey2020: 'https://w3id.org/security/suites/jws-2020/v1',
};

/**
 * The W3C document of `rec`: ddn's document (ledger-rules.md §3.3) with the root key added as the Multikey
 * verification method `<did>#root` — the key that controls the DID — listed under `authentication`,
 * `assertionMethod` and `capabilityInvocation` (unless the document already has a method of that id).
 */
export function w3cDocument(did: string, rec: Pick<DidRecord, 'document' | 'rootPubkey'>): W3cDidDocument {
  const doc = documentToJson(rec.document ?? emptyDocument(did));
  const rootId = `${did}#${ROOT_FRAGMENT}`;
  const hasRoot = doc.verificationMethod.some((vm) => vm.id === rootId);
  const root: VerificationMethodJson = { id: rootId, type: 'Multikey', controller: did, publicKeyMultibase: multibaseEd25519(rec.rootPubkey) };
  const out: W3cDidDocument = {
    id: did,
    verificationMethod: hasRoot ? doc.verificationMethod : [root, ...doc.verificationMethod],
    authentication: hasRoot ? doc.authentication : [rootId, ...doc.authentication.filter((a) => a !== rootId)],
    assertionMethod: [rootId],
    capabilityInvocation: [rootId],
  };
  if (doc.keyAgreement.length > 0) out.keyAgreement = doc.keyAgreement;
  if (doc.service.length > 0) out.service = doc.service;
  return out;
}

/** The document with `@context`: DID v1, then the context of each key type it uses, once each. */
export function withContext(doc: W3cDidDocument): W3cDidDocument {
  const contexts = [DID_V1_CONTEXT];
  for (const vm of [...doc.verificationMethod, ...(doc.keyAgreement ?? [])]) {
    const c = TYPE_CONTEXTS[vm.type];
    if (c !== undefined && !contexts.includes(c)) contexts.push(c);
  }
  return { '@context': contexts, ...doc };
}

/** One version of a DID record and when it took effect. */
export interface RecordVersion {
  record: DidRecord;
  /** Unix ms of the block that made it. */
  atMs: number;
}

/** The metadata of `version`; `next` is the version after it (or the deletion that ended it), if any. */
export function documentMetadata(version: RecordVersion, createdMs: number | undefined, next?: { atMs: number; versionId?: number }): W3cDocumentMetadata {
  const m: W3cDocumentMetadata = {};
  if (createdMs !== undefined) m.created = xmlDateTime(createdMs);
  m.updated = xmlDateTime(version.record.updatedAt);
  m.deactivated = version.record.deactivated;
  m.versionId = String(version.record.version);
  if (next !== undefined) {
    m.nextUpdate = xmlDateTime(next.atMs);
    if (next.versionId !== undefined) m.nextVersionId = String(next.versionId);
  }
  return m;
}

/** The DID URL forms that name `fragment` of `did`: absolute (`<did>#f`) and relative (`#f`). */
function namesFragment(id: string, did: string, fragment: string): boolean {
  return id === `${did}#${fragment}` || id === `#${fragment}`;
}

/** What a fragment selects: a verification method, a key agreement or a service (NOT_FOUND otherwise). */
export function selectFragment(doc: W3cDidDocument, fragment: string): VerificationMethodJson | ServiceJson {
  const all: (VerificationMethodJson | ServiceJson)[] = [...doc.verificationMethod, ...(doc.keyAgreement ?? []), ...(doc.service ?? [])];
  const hit = all.find((x) => namesFragment(x.id, doc.id, fragment));
  if (hit === undefined) throw new ResolutionError('NOT_FOUND', `the document has nothing with id #${fragment}`);
  return hit;
}

/**
 * The URL `?service=<id>[&relativeRef=…]` selects: the first endpoint of the service whose id names that
 * fragment, with `relativeRef` appended (DID Core §3.2.1's example); NOT_FOUND without such a service.
 */
export function serviceUrl(doc: W3cDidDocument, service: string, relativeRef: string | undefined): string {
  const s = (doc.service ?? []).find((x) => namesFragment(x.id, doc.id, service));
  // rendered documents carry endpoints as an array (documentToJson); the wire form also allows one string
  const endpoint = typeof s?.serviceEndpoint === 'string' ? s.serviceEndpoint : s?.serviceEndpoint[0];
  if (endpoint === undefined) throw new ResolutionError('NOT_FOUND', `the document has no service #${service}`);
  if (relativeRef === undefined || relativeRef === '') return endpoint;
  return endpoint.endsWith('/') && relativeRef.startsWith('/') ? endpoint + relativeRef.slice(1) : endpoint + relativeRef;
}
