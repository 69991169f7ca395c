/**
 * The W3C DID Resolution HTTP(S) binding's request side (`GET /1.0/identifiers/{did}`, docs/api.md "W3C DID
 * Resolution"), as pure functions: the DID URL and its parameters, the representation the `Accept` header asks
 * for, and W3C's errors with their HTTP statuses. This route follows W3C, not http-api.md §0: its errors are
 * resolution results, not §0.6 bodies.
 */
import { isDid } from '../protocol/did.js';

/** W3C's error types (`https://www.w3.org/ns/did#<TYPE>`) this binding answers, with their HTTP statuses. */
export const W3C_ERRORS = {
  INVALID_DID: 400,
  INVALID_DID_URL: 400,
  INVALID_OPTIONS: 400,
  NOT_FOUND: 404,
  REPRESENTATION_NOT_SUPPORTED: 406,
  INTERNAL_ERROR: 500,
  METHOD_NOT_SUPPORTED: 501,
} as const;
export type W3cErrorType = keyof typeof W3C_ERRORS;

/** A failed resolution or dereferencing: answered as a result whose metadata carries `error`. */
export class ResolutionError extends Error {
  constructor(
    readonly type: W3cErrorType,
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'ResolutionError';
  }
  get status(): number {
    return W3C_ERRORS[this.type];
  }
  /** The RFC 9457 problem details object W3C puts in `didResolutionMetadata.error`. */
  toJson(): { type: string; title: string; detail: string } {
    return { type: `https://www.w3.org/ns/did#${this.type}`, title: this.type.toLowerCase().replace(/_/g, ' '), detail: this.detail };
  }
}

export const MEDIA = {
  resolution: 'application/did-resolution',
  dereferencing: 'application/did-url-dereferencing',
  didJson: 'application/did+json',
  didLdJson: 'application/did+ld+json',
  uriList: 'text/uri-list',
} as const;
export type Representation = (typeof MEDIA)[keyof typeof MEDIA];

/** A DID URL split into its DID and the rest (W3C DID syntax: `did:method:id[/path][?query][#fragment]`). */
export interface DidUrl {
  did: string;
  method: string;
  path: string;
  /** The DID URL's own query parameters (the request's query is merged in by {@link parseRequest}). */
  query: URLSearchParams;
  /** Without `#`; undefined when the DID URL has none. */
  fragment: string | undefined;
}

const ID_CHAR = String.raw`(?:[A-Za-z0-9._-]|%[0-9A-Fa-f]{2})`;
/** The generic DID syntax of DID Core §3.1 (method names lower-case letters and digits). */
const GENERIC_DID = new RegExp(`^did:([a-z0-9]+):(?:${ID_CHAR}*:)*${ID_CHAR}+$`);

/** Splits `text` as a DID URL; INVALID_DID when its DID part does not follow the generic DID syntax. */
export function parseDidUrl(text: string): DidUrl {
  const hash = text.indexOf('#');
  const beforeFragment = hash < 0 ? text : text.slice(0, hash);
  const q = beforeFragment.indexOf('?');
  const beforeQuery = q < 0 ? beforeFragment : beforeFragment.slice(0, q);
  const slash = beforeQuery.indexOf('/');
  const did = slash < 0 ? beforeQuery : beforeQuery.slice(0, slash);
  const m = GENERIC_DID.exec(did);
  if (m === null) throw new ResolutionError('INVALID_DID', 'not a DID (did:<method>:<method-specific-id>)');
  return {
    did,
    method: m[1]!,
    path: slash < 0 ? '' : beforeQuery.slice(slash),
    query: new URLSearchParams(q < 0 ? '' : beforeFragment.slice(q + 1)),
    fragment: hash < 0 ? undefined : text.slice(hash + 1),
  };
}

/** What a request asks for, once checked. */
export interface ResolutionRequest {
  did: string;
  path: string;
  fragment: string | undefined;
  /** `?versionId=`: a record version (positive integer). */
  versionId: number | undefined;
  /** `?versionTime=`: Unix seconds of an XML datetime in UTC, without fractions. */
  versionTime: number | undefined;
  /** `?service=`: the fragment of a service id. */
  service: string | undefined;
  /** `?relativeRef=`: appended to the selected service endpoint. */
  relativeRef: string | undefined;
  /** The representation answered. */
  accept: Representation;
}

const XML_DATETIME_UTC = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z$/;

/** `versionTime`: an XML datetime normalised to UTC without fractions (`2026-01-02T03:04:05Z`) → Unix seconds. */
export function parseVersionTime(v: string): number | undefined {
  const m = XML_DATETIME_UTC.exec(v);
  if (m === null) return undefined;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  // a calendar date that does not exist (2026-02-30) comes back as another one
  if (!Number.isFinite(ms) || xmlDateTime(ms) !== v) return undefined;
  return ms / 1000;
}

/** Unix ms → an XML datetime in UTC without fractions, as W3C's metadata times are written. */
export function xmlDateTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.000Z$/, 'Z');
}

interface MediaRange {
  type: string;
  q: number;
  order: number;
}

/** The `Accept` header's media ranges, best first (q, then order); an absent header accepts anything. */
function mediaRanges(accept: string | undefined): MediaRange[] {
  if (accept === undefined || accept.trim() === '') return [{ type: '*/*', q: 1, order: 0 }];
  const ranges: MediaRange[] = [];
  accept.split(',').forEach((part, order) => {
    const [type, ...params] = part.split(';').map((s) => s.trim());
    if (type === undefined || type === '') return;
    let q = 1;
    for (const p of params) {
      const [k, v] = p.split('=').map((s) => s.trim());
      if (k?.toLowerCase() === 'q') q = v !== undefined && /^(0(\.[0-9]{0,3})?|1(\.0{0,3})?)$/.test(v) ? Number(v) : 0;
    }
    if (q > 0) ranges.push({ type: type.toLowerCase(), q, order });
  });
  return ranges.sort((a, b) => b.q - a.q || a.order - b.order);
}

/**
 * The representation to answer from `offered` (the server's preference first) for an `Accept` header: the first
 * offered type the best media range matches; undefined (406) when none does.
 */
export function negotiate(accept: string | undefined, offered: readonly Representation[]): Representation | undefined {
  for (const range of mediaRanges(accept)) {
    const [main] = range.type.split('/');
    const hit = offered.find((t) => range.type === '*/*' || range.type === t || (range.type === `${main}/*` && t.startsWith(`${main}/`)));
    if (hit !== undefined) return hit;
  }
  return undefined;
}

/** The representations a request may ask for: a plain DID, a DID URL with a fragment, one with `service`. */
function offeredFor(url: { fragment: string | undefined; service: string | undefined }): readonly Representation[] {
  if (url.service !== undefined) return [MEDIA.uriList, MEDIA.dereferencing];
  if (url.fragment !== undefined) return [MEDIA.dereferencing, MEDIA.didJson, MEDIA.didLdJson];
  return [MEDIA.resolution, MEDIA.didJson, MEDIA.didLdJson, MEDIA.dereferencing];
}

/** A relative reference (RFC 3986 §4.2) that is not a network-path one, without whitespace. */
const RELATIVE_REF = /^(?![A-Za-z][A-Za-z0-9+.-]*:)(?!\/\/)[^\s]*$/;

/**
 * Checks one request: `raw` is the path segment, percent-decoded once (the DID or DID URL), `query` the
 * request's query (merged over the DID URL's own), `methods` the DID methods this network serves.
 */
export function parseRequest(raw: string, query: Record<string, string>, accept: string | undefined, methods: readonly string[]): ResolutionRequest {
  const url = parseDidUrl(raw);
  if (!methods.includes(url.method)) throw new ResolutionError('METHOD_NOT_SUPPORTED', `this network serves did:${methods.join(', did:')} only`);
  if (!isDid(url.did)) throw new ResolutionError('INVALID_DID', `not a did:${url.method} DID (ledger-rules.md §3.1)`);
  const params = new Map(url.query);
  for (const [k, v] of Object.entries(query)) params.set(k, v);
  const option = (name: string): string | undefined => params.get(name);

  const versionIdText = option('versionId');
  let versionId: number | undefined;
  if (versionIdText !== undefined) {
    if (!/^[1-9][0-9]{0,14}$/.test(versionIdText)) throw new ResolutionError('INVALID_OPTIONS', 'versionId must be a positive integer (a record version)');
    versionId = Number(versionIdText);
  }
  const versionTimeText = option('versionTime');
  let versionTime: number | undefined;
  if (versionTimeText !== undefined) {
    versionTime = parseVersionTime(versionTimeText);
    if (versionTime === undefined)
      throw new ResolutionError('INVALID_OPTIONS', 'versionTime must be an XML datetime in UTC without fractions (2026-01-02T03:04:05Z)');
  }
  if (versionId !== undefined && versionTime !== undefined) throw new ResolutionError('INVALID_OPTIONS', 'give versionId or versionTime, not both');
  const service = option('service');
  if (service !== undefined && (service === '' || /[\s#?/]/.test(service)))
    throw new ResolutionError('INVALID_OPTIONS', 'service must be the fragment of a service id');
  const relativeRef = option('relativeRef');
  if (relativeRef !== undefined) {
    if (service === undefined) throw new ResolutionError('INVALID_OPTIONS', 'relativeRef needs service');
    if (!RELATIVE_REF.test(relativeRef)) throw new ResolutionError('INVALID_OPTIONS', 'relativeRef must be a relative reference');
  }
  if (url.fragment !== undefined && service !== undefined) throw new ResolutionError('INVALID_DID_URL', 'a fragment and service together select nothing');
  const chosen = negotiate(accept, offeredFor({ fragment: url.fragment, service }));
  if (chosen === undefined) {
    throw new ResolutionError('REPRESENTATION_NOT_SUPPORTED', `representations offered: ${offeredFor({ fragment: url.fragment, service }).join(', ')}`);
  }
  return { did: url.did, path: url.path, fragment: url.fragment, versionId, versionTime, service, relativeRef, accept: chosen };
}
