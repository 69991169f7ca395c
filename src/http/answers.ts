/**
 * How a role's server answers: a handler's answer written straight to Node's response, an error as the §0.6 body
 * (or its route's own: the Relay's DeliveryResult) with the headers its status needs, each answer told to the
 * metrics observer.
 */
import { memberOf } from '../base/guards.js';
import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { DdnError, type ErrorCode } from '../base/errors.js';
import { BodyError } from './body-reader.js';
import type { HttpResponse, JsonPayload, RequestLogger } from './context.js';
import type { LingeringCloses } from './lingering-close.js';
import { authenticateChallenge, errorBody, retryAfterSeconds, toDdnError } from './error-body.js';
import { secondsSince } from './request-state.js';
import type { Route } from './route.js';

export const CONTENT_TYPE = 'application/json; charset=utf-8';

/** Records the answers of one route. */
export interface RequestRecorder {
  /** One answer: its status, its error code (error answers only) and the seconds from arrival to answer. */
  record(status: number, code: string | undefined, seconds: number): void;
}

/**
 * Told of every answered request, cheaply: label values are resolved once per route, when it is added, into a
 * {@link RequestRecorder}; a request then costs one call.
 */
export interface HttpObserver {
  /** The recorder of the requests matched to route `pattern` of `method`. */
  route(method: string, pattern: string): RequestRecorder;
  /** The recorder of requests that matched no route (404, 405, requests refused before routing). */
  readonly unmatched: RequestRecorder;
}

/** A route as the server holds it: the object, and its recorder. */
export interface Mounted {
  route: Route;
  recorder: RequestRecorder | undefined;
  /** Not told to the observer (`/openapi.json`). */
  unobserved?: boolean;
}

export interface Answerer {
  /** Answers `err` (a `DdnError`, a {@link BodyError}, or anything else: 500) on a fastify reply. */
  sendError(request: FastifyRequest, reply: FastifyReply, err: unknown, mounted: Mounted | undefined): void;
  /** Writes a handler's answer. */
  write(request: FastifyRequest, reply: FastifyReply, mounted: Mounted, r: HttpResponse): void;
  /** Maps errors fastify raises before our handler runs to codes. */
  fromFramework(err: unknown): unknown;
}

export interface AnswererDeps {
  logOf: (request: FastifyRequest) => RequestLogger;
  observer: HttpObserver | undefined;
  tooLargeCode: ErrorCode;
  bodyLimitBytes: number;
  /** Where a connection answered while its client may still send its body closes in stages. */
  lingering: LingeringCloses;
}

export function createAnswerer(d: AnswererDeps): Answerer {
  const observer = d.observer;

  function record(mounted: Mounted | undefined, status: number, code: string | undefined, seconds: number): void {
    if (observer !== undefined && mounted?.unobserved !== true) (mounted?.recorder ?? observer.unmatched).record(status, code, seconds);
  }

  /** The body and headers of the error answer to `err`; logs what the client must not see. */
  function errorAnswer(err: unknown, route: Route | undefined, log: FastifyBaseLogger | undefined) {
    const e = toDdnError(err);
    if (e !== err) log?.error({ err }, 'unhandled error');
    else if (e.status >= 500) log?.warn({ code: e.code, reason: e.message }, 'server-side failure');
    let body: object = errorBody(e);
    if (route?.errorBody !== undefined) {
      try {
        body = route.errorBody(e);
      } catch (bodyErr) {
        log?.error({ err: bodyErr }, 'errorBody failed');
      }
    }
    const headers: Record<string, string> = {};
    const allow = e.details?.allow;
    if (e.code === 'method_not_allowed' && Array.isArray(allow)) headers.allow = allow.join(', ');
    if (e.status === 429 || e.status === 503) headers['retry-after'] = String(retryAfterSeconds(e));
    const challenge = authenticateChallenge(e);
    if (challenge !== undefined) headers['www-authenticate'] = challenge;
    return { e, body: JSON.stringify(body), headers };
  }

  function sendError(request: FastifyRequest, reply: FastifyReply, err: unknown, mounted: Mounted | undefined): void {
    if (reply.sent || reply.raw.headersSent) return;
    const close = err instanceof BodyError && err.closeConnection;
    const { e, body, headers } = errorAnswer(err instanceof BodyError ? err.error : err, mounted?.route, d.logOf(request));
    reply.code(e.status).headers(headers).header('x-request-id', request.id).type(CONTENT_TYPE);
    // fastify closes after any body-parser failure; ours say when unread bytes may follow
    if (close) {
      reply.header('connection', 'close');
      d.lingering.arm(request.raw.socket);
    } else reply.removeHeader('connection');
    record(mounted, e.status, e.code, secondsSince(request));
    void reply.send(body);
  }

  /**
   * Writes a handler's answer straight to Node's response (fastify's reply is hijacked: an answer needs none of
   * its send pipeline — no hooks, serialisers or content-type handling — and a `HEAD` answer's body is dropped by
   * Node). fastify's `finish` listeners still run, so `onResponse` (the access log) sees every answer.
   */
  function write(request: FastifyRequest, reply: FastifyReply, mounted: Mounted, r: HttpResponse): void {
    if (reply.sent) return;
    let payload: JsonPayload;
    try {
      payload = r.payload ?? JSON.stringify(r.body);
    } catch (err) {
      sendError(request, reply, err, mounted);
      return;
    }
    const headers: OutgoingHttpHeaders = { 'content-type': r.contentType ?? CONTENT_TYPE, 'x-request-id': request.id };
    if (r.headers !== undefined) for (const name in r.headers) headers[name.toLowerCase()] = r.headers[name];
    if ((r.status === 429 || r.status === 503) && headers['retry-after'] === undefined) headers['retry-after'] = '1';
    if (r.status === 401 && headers['www-authenticate'] === undefined) headers['www-authenticate'] = 'Bearer realm="ddn"';
    record(mounted, r.status, undefined, secondsSince(request));
    reply.hijack();
    const res = reply.raw;
    if (typeof payload === 'string' || Buffer.isBuffer(payload)) {
      headers['content-length'] = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
      res.writeHead(r.status, headers);
      res.end(payload);
      return;
    }
    // bytes in parts (stored envelopes): written uncopied, with their total length, in one socket write
    let length = 0;
    for (const part of payload) length += part.length;
    headers['content-length'] = length;
    res.writeHead(r.status, headers);
    res.cork();
    for (const part of payload) res.write(part);
    res.end();
  }

  function fromFramework(err: unknown): unknown {
    if (err instanceof DdnError || err instanceof BodyError || typeof err !== 'object' || err === null) return err;
    const code = memberOf(err, 'code');
    const statusCode = memberOf(err, 'statusCode');
    if (code === 'FST_ERR_CTP_BODY_TOO_LARGE' || statusCode === 413) {
      return new DdnError(d.tooLargeCode, `request body exceeds ${d.bodyLimitBytes} bytes`, { limit_bytes: d.bodyLimitBytes });
    }
    if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || statusCode === 415) return new DdnError('unsupported_media_type');
    if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) return new DdnError('invalid_request', 'malformed request');
    return err;
  }

  return { sendError, write, fromFramework };
}
