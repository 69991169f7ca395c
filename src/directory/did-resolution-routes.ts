/**
 * `GET /1.0/identifiers/{did}`: the W3C DID Resolution HTTP(S) binding (docs/api.md "W3C DID Resolution"), beside
 * the spec's own `/resolve/{did}`. Media types, statuses and error bodies are W3C's, not http-api.md §0's.
 */
import type { PayloadAnswer } from '../http/server.js';

type HttpResponse = PayloadAnswer<number>;
import { asIs, defineRoute, type Route } from '../http/route.js';
import { IDENTIFIERS_RESPONSES, IdentifiersQuerySchema } from '../wire/did-resolution.js';
import { selectFragment, serviceUrl, w3cDocument, withContext } from './did-document-w3c.js';
import { MEDIA, parseRequest, ResolutionError, xmlDateTime, type Representation, type ResolutionRequest } from './did-resolution.js';
import { DidVersions, type Found } from './did-versions.js';
import type { DirectoryService } from './service.js';

const RESULT_CONTEXT = 'https://w3id.org/did-resolution/v1';

function send(status: number, type: string, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  return { status, body: {}, payload: JSON.stringify(body), contentType: type, headers: { vary: 'Accept', ...headers } };
}

/** A W3C error as the result the client asked for (a dereferencing result when it asked for one). */
function failure(e: ResolutionError, accept: string | undefined): HttpResponse {
  if (accept?.includes(MEDIA.dereferencing) === true) {
    return send(e.status, MEDIA.dereferencing, {
      '@context': RESULT_CONTEXT,
      dereferencingMetadata: { error: e.toJson() },
      contentStream: null,
      contentMetadata: {},
    });
  }
  return send(e.status, MEDIA.resolution, {
    '@context': RESULT_CONTEXT,
    didResolutionMetadata: { error: e.toJson() },
    didDocument: null,
    didDocumentMetadata: {},
  });
}

/** A deleted DID: 410, no document, metadata saying it is deactivated. */
function deleted(found: Extract<Found, { kind: 'deleted' }>, accept: Representation): HttpResponse {
  const metadata = { ...(found.createdMs === undefined ? {} : { created: xmlDateTime(found.createdMs) }), updated: xmlDateTime(found.atMs), deactivated: true };
  if (accept === MEDIA.dereferencing) {
    return send(410, MEDIA.dereferencing, { '@context': RESULT_CONTEXT, dereferencingMetadata: {}, contentStream: null, contentMetadata: metadata });
  }
  return send(410, MEDIA.resolution, {
    '@context': RESULT_CONTEXT,
    didResolutionMetadata: { contentType: MEDIA.resolution },
    didDocument: null,
    didDocumentMetadata: metadata,
  });
}

/** The answer to a checked request. */
function answer(req: ResolutionRequest, found: Found): HttpResponse {
  if (found.kind === 'deleted') return deleted(found, req.accept);
  if (req.path !== '') throw new ResolutionError('NOT_FOUND', 'a DID URL path selects nothing on this network');
  const doc = w3cDocument(req.did, found.version.record);
  const ld = withContext(doc);
  if (req.service !== undefined) {
    const url = serviceUrl(doc, req.service, req.relativeRef);
    if (req.accept === MEDIA.dereferencing) {
      return send(200, MEDIA.dereferencing, {
        '@context': RESULT_CONTEXT,
        dereferencingMetadata: { contentType: MEDIA.uriList },
        contentStream: url,
        contentMetadata: {},
      });
    }
    return { status: 303, body: {}, payload: '', contentType: MEDIA.uriList, headers: { location: url, vary: 'Accept' } };
  }
  if (req.fragment !== undefined) {
    const selected = selectFragment(doc, req.fragment);
    if (req.accept === MEDIA.dereferencing) {
      return send(200, MEDIA.dereferencing, {
        '@context': RESULT_CONTEXT,
        dereferencingMetadata: { contentType: MEDIA.didJson },
        contentStream: selected,
        contentMetadata: {},
      });
    }
    return send(200, req.accept, req.accept === MEDIA.didLdJson ? { '@context': ld['@context'], ...selected } : selected);
  }
  const status = found.metadata.deactivated === true ? 410 : 200;
  switch (req.accept) {
    case MEDIA.didJson:
      return send(status, MEDIA.didJson, doc);
    case MEDIA.didLdJson:
      return send(status, MEDIA.didLdJson, ld);
    case MEDIA.dereferencing:
      return send(status, MEDIA.dereferencing, {
        '@context': RESULT_CONTEXT,
        dereferencingMetadata: { contentType: MEDIA.didLdJson },
        contentStream: ld,
        contentMetadata: found.metadata,
      });
    default:
      return send(status, MEDIA.resolution, {
        '@context': RESULT_CONTEXT,
        didResolutionMetadata: { contentType: MEDIA.resolution },
        didDocument: ld,
        didDocumentMetadata: found.metadata,
      });
  }
}

/**
 * The W3C route: its own media types and statuses (W3C's result bodies), and beside them the §0.6 answers the HTTP
 * layer gives any route (a bad path escape 400 `invalid_path`, the rate limit's 429).
 */
export function didResolutionRoutes(service: DirectoryService): Route[] {
  const versions = new DidVersions(service.deps.ledger);
  const methods = [service.deps.profile.p];
  return [
    defineRoute({
      method: 'GET',
      url: '/1.0/identifiers/:did',
      summary: 'W3C DID Resolution and DID URL dereferencing (HTTP(S) binding)',
      tags: ['directory'],
      query: IdentifiersQuerySchema,
      answers: IDENTIFIERS_RESPONSES,
      errors: [],
      rateClass: 'read',
      parse: asIs,
      handle: (_input, ctx) => {
        const accept = ctx.header('accept');
        try {
          const req = parseRequest(ctx.params.did, ctx.query, accept, methods);
          return answer(req, versions.find(req.did, req));
        } catch (err) {
          if (err instanceof ResolutionError) return failure(err, accept);
          ctx.log.error({ err }, 'W3C DID resolution failed');
          return failure(new ResolutionError('INTERNAL_ERROR', 'the resolution failed; see the node log'), accept);
        }
      },
    }),
  ];
}
