/**
 * An independent check of W3C DID Resolution answers, written from the W3C texts (DID Core 1.0 §3.1 syntax, §5
 * document properties, §7.1 resolution; DID Resolution's HTTP(S) binding) and not from ddn's code: the status of
 * each error type, the result's members, a conformant DID document. Returns the problems found (empty: none).
 */
export type Json = Record<string, unknown>;

/** DID Resolution's HTTP(S) binding: the status of each error type. */
const STATUS_OF_ERROR: Record<string, number> = {
  INVALID_DID: 400,
  INVALID_DID_URL: 400,
  INVALID_OPTIONS: 400,
  NOT_FOUND: 404,
  REPRESENTATION_NOT_SUPPORTED: 406,
  INTERNAL_ERROR: 500,
  METHOD_NOT_SUPPORTED: 501,
};

const DID = /^did:[a-z0-9]+:(?:(?:[A-Za-z0-9._-]|%[0-9A-Fa-f]{2})*:)*(?:[A-Za-z0-9._-]|%[0-9A-Fa-f]{2})+$/;
const XML_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A DID URL: a DID, then optional path, query, fragment; or a relative one (`#frag`). */
function isDidUrl(s: unknown, did: string): boolean {
  if (typeof s !== 'string') return false;
  if (s.startsWith('#')) return s.length > 1;
  const m = /^([^/?#]*)([/?#].*)?$/.exec(s);
  return m !== null && DID.test(m[1]!) && (m[1] === did || m[2] !== undefined);
}

/** DID Core §5: a conformant document of `did` (JSON representation; `@context` required in JSON-LD). */
export function documentProblems(doc: unknown, did: string, jsonLd: boolean): string[] {
  const p: string[] = [];
  if (!isObj(doc)) return ['document is not an object'];
  if (doc.id !== did) p.push(`id ${String(doc.id)} is not the DID resolved`);
  if (jsonLd) {
    const ctx = doc['@context'];
    const first = Array.isArray(ctx) ? ctx[0] : ctx;
    if (first !== 'https://www.w3.org/ns/did/v1') p.push('JSON-LD: @context does not start with the DID v1 context');
  }
  const methods: Json[] = [];
  const vmList = doc.verificationMethod;
  if (vmList !== undefined && !Array.isArray(vmList)) p.push('verificationMethod is not a set');
  for (const vm of Array.isArray(vmList) ? (vmList as unknown[]) : []) {
    if (!isObj(vm)) {
      p.push('a verification method is not a map');
      continue;
    }
    methods.push(vm);
    if (!isDidUrl(vm.id, did)) p.push(`verification method id ${String(vm.id)} is not a DID URL`);
    if (typeof vm.type !== 'string') p.push('verification method without type');
    if (typeof vm.controller !== 'string' || !DID.test(vm.controller)) p.push('verification method controller is not a DID');
    if (vm.publicKeyMultibase !== undefined && (typeof vm.publicKeyMultibase !== 'string' || !vm.publicKeyMultibase.startsWith('z'))) {
      p.push('publicKeyMultibase is not base58btc multibase');
    }
  }
  const ids = methods.map((m) => m.id as string);
  if (new Set(ids).size !== ids.length) p.push('verification method ids repeat');
  for (const rel of ['authentication', 'assertionMethod', 'keyAgreement', 'capabilityInvocation', 'capabilityDelegation']) {
    const v = doc[rel];
    if (v === undefined) continue;
    if (!Array.isArray(v)) {
      p.push(`${rel} is not a set`);
      continue;
    }
    for (const entry of v as unknown[]) {
      if (typeof entry === 'string') {
        const abs = entry.startsWith('#') ? `${did}${entry}` : entry;
        if (!ids.some((id) => (id.startsWith('#') ? `${did}${id}` : id) === abs)) p.push(`${rel} names ${entry}, which is no verification method`);
      } else if (!isObj(entry) || !isDidUrl(entry.id, did)) p.push(`${rel} holds something that is not a verification method`);
    }
  }
  if (doc.service !== undefined) {
    if (!Array.isArray(doc.service)) p.push('service is not a set');
    else {
      for (const s of doc.service as unknown[]) {
        if (!isObj(s) || typeof s.id !== 'string' || !/^[a-z][a-z0-9+.-]*:|^#/i.test(s.id)) p.push('a service id is not a URI');
        else if (typeof s.type !== 'string' && !Array.isArray(s.type)) p.push('a service has no type');
        else if (!(typeof s.serviceEndpoint === 'string' || isObj(s.serviceEndpoint) || Array.isArray(s.serviceEndpoint)))
          p.push('a service has no serviceEndpoint');
      }
    }
  }
  return p;
}

/** DID Core §7.1.3: document metadata times are XML datetimes in UTC without fractions; deactivated a boolean. */
export function metadataProblems(m: unknown): string[] {
  if (!isObj(m)) return ['didDocumentMetadata is not a map'];
  const p: string[] = [];
  for (const k of ['created', 'updated', 'nextUpdate'])
    if (m[k] !== undefined && (typeof m[k] !== 'string' || !XML_UTC.test(m[k]))) p.push(`${k} is not an XML datetime in UTC`);
  for (const k of ['versionId', 'nextVersionId']) if (m[k] !== undefined && typeof m[k] !== 'string') p.push(`${k} is not a string`);
  if (m.deactivated !== undefined && typeof m.deactivated !== 'boolean') p.push('deactivated is not a boolean');
  return p;
}

/** A resolution result (`application/did-resolution`) answered with `status` and `contentType` for `did`. */
export function resolutionProblems(status: number, contentType: string | null, body: unknown, did: string): string[] {
  if (!isObj(body)) return ['the result is not a map'];
  const p: string[] = [];
  for (const k of ['didResolutionMetadata', 'didDocument', 'didDocumentMetadata']) if (!(k in body)) p.push(`no ${k}`);
  const rm = body.didResolutionMetadata;
  if (!isObj(rm)) return [...p, 'didResolutionMetadata is not a map'];
  const error = rm.error;
  if (error !== undefined) {
    if (!isObj(error) || typeof error.type !== 'string') return [...p, 'error is not problem details with a type'];
    const m = /^https:\/\/www\.w3\.org\/ns\/did#([A-Z_]+)$/.exec(error.type);
    if (m === null) p.push(`error type ${error.type} is not a W3C DID error URI`);
    else if (STATUS_OF_ERROR[m[1]!] !== status) p.push(`error ${m[1]} answered with ${status}, not ${STATUS_OF_ERROR[m[1]!]}`);
    if (body.didDocument !== null) p.push('an error result carries a document');
    if (!isObj(body.didDocumentMetadata) || Object.keys(body.didDocumentMetadata).length > 0) p.push('an error result carries document metadata');
    return p;
  }
  if (rm.contentType !== contentType) p.push(`contentType ${String(rm.contentType)} differs from Content-Type ${String(contentType)}`);
  p.push(...metadataProblems(body.didDocumentMetadata));
  const deactivated = isObj(body.didDocumentMetadata) && body.didDocumentMetadata.deactivated === true;
  if (deactivated !== (status === 410)) p.push(`deactivated ${deactivated} answered with ${status}`);
  if (!deactivated && status !== 200) p.push(`a successful resolution answered ${status}`);
  if (body.didDocument !== null || !deactivated) p.push(...documentProblems(body.didDocument, did, true));
  return p;
}
