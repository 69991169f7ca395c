/**
 * A driver for the `did-resolver` package (`new Resolver(getResolver({ directoryUrl }))`), so that did-jwt,
 * Veramo and other `did-resolver` users resolve ddn DIDs: it asks the Directory's W3C DID Resolution route
 * (`GET /1.0/identifiers/{did}`, docs/api.md) and hands back the result. Structurally typed: the SDK does not
 * depend on `did-resolver`.
 */
import { isJsonObject } from '../base/guards.js';
import type { W3cDidDocumentJson, W3cDocumentMetadataJson, W3cErrorJson } from '../wire/did-resolution.js';
import { joinUrl, type FetchLike } from './http.js';

/** A resolution result as `did-resolver` reads it (its `error` a keyword, W3C's problem details in `problem`). */
export interface DidResolverResult {
  didResolutionMetadata: { contentType?: string; error?: string; message?: string; problem?: W3cErrorJson };
  didDocument: W3cDidDocumentJson | null;
  didDocumentMetadata: W3cDocumentMetadataJson;
}

/** The parts of `did-resolver`'s `ParsedDID` the driver reads. */
export interface ParsedDidLike {
  did: string;
  /** The DID URL's query, without `?` (`versionId=2`, `versionTime=…`): passed on as resolution options. */
  query?: string;
}

/** A `did-resolver` method driver. */
export type DidResolverDriver = (did: string, parsed: ParsedDidLike, resolver: unknown, options: { accept?: string }) => Promise<DidResolverResult>;

export interface DidResolverOptions {
  /** The Directory's base URL, e.g. `http://127.0.0.1:8080`. */
  directoryUrl: string;
  /** The DID method the Directory serves: its profile (default `platform`). */
  method?: string;
  /** Default: the global `fetch`. */
  fetch?: FetchLike;
}

/** `did-resolver`'s keywords for W3C's error types (others: the type in camel case). */
const KEYWORDS: Record<string, string> = {
  INVALID_DID: 'invalidDid',
  NOT_FOUND: 'notFound',
  REPRESENTATION_NOT_SUPPORTED: 'representationNotSupported',
  METHOD_NOT_SUPPORTED: 'unsupportedDidMethod',
};

const keywordOf = (type: string): string => {
  const name = type.replace(/^.*#/, '');
  return KEYWORDS[name] ?? name.toLowerCase().replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
};

const failed = (error: string, message: string, problem?: W3cErrorJson): DidResolverResult => ({
  didResolutionMetadata: { error, message, ...(problem === undefined ? {} : { problem }) },
  didDocument: null,
  didDocumentMetadata: {},
});

function isResult(
  v: unknown,
): v is { didResolutionMetadata: { error?: W3cErrorJson }; didDocument: W3cDidDocumentJson | null; didDocumentMetadata: W3cDocumentMetadataJson } {
  if (!isJsonObject(v)) return false;
  const r = v;
  return typeof r.didResolutionMetadata === 'object' && r.didResolutionMetadata !== null && 'didDocument' in r && typeof r.didDocumentMetadata === 'object';
}

/**
 * The driver registry for `did-resolver`'s `Resolver`: `{ [method]: driver }`. A deactivated DID resolves with
 * its document and `didDocumentMetadata.deactivated: true`; a deleted one with no document.
 */
export function getResolver(opts: DidResolverOptions): Record<string, DidResolverDriver> {
  const fetchImpl: FetchLike = opts.fetch ?? (fetch as unknown as FetchLike);
  const driver: DidResolverDriver = async (_did, parsed) => {
    const query = parsed.query === undefined || parsed.query === '' ? '' : `?${parsed.query}`;
    const url = joinUrl(opts.directoryUrl, `/1.0/identifiers/${encodeURIComponent(parsed.did)}${query}`);
    let text: string;
    try {
      text = await (await fetchImpl(url, { method: 'GET', headers: { accept: 'application/did-resolution' } })).text();
    } catch (err) {
      return failed('internalError', `the Directory did not answer: ${err instanceof Error ? err.message : String(err)}`);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (!isResult(body)) return failed('internalError', 'the Directory did not answer with a resolution result');
    const problem = body.didResolutionMetadata.error;
    if (problem !== undefined) return failed(keywordOf(problem.type), problem.detail, problem);
    return { didResolutionMetadata: { contentType: 'application/did+ld+json' }, didDocument: body.didDocument, didDocumentMetadata: body.didDocumentMetadata };
  };
  return { [opts.method ?? 'platform']: driver };
}
