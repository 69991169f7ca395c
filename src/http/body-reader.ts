/**
 * Reading a request body as bytes (http-api.md §0.3) straight from Node's request stream: the size limit is
 * checked on `Content-Length` before reading and again while reading (413 before any parsing), a body shorter
 * or longer than its `Content-Length` is 400, a syntactically invalid `Content-Type` is 415, and a body that
 * does not arrive within `timeoutMs` is 408 `request_timeout`. Methods without a body (`GET`, `HEAD`, `TRACE`)
 * never have theirs read, as in fastify.
 *
 * A body over the limit is not kept, but read and discarded up to {@link TOO_LARGE_DRAIN_BYTES} before the 413
 * is answered: a client that writes its whole body before reading (Python's urllib, Node's fetch) then reads the
 * 413 instead of a connection reset. A larger one is answered at once and its connection closed.
 */
import type { IncomingMessage } from 'node:http';
import { DdnError, type ErrorCode } from '../base/errors.js';

const BODYLESS = new Set(['GET', 'HEAD', 'TRACE']);
/**
 * Bodies from this size on are read into shared memory, so that handing them to another thread (the Cache's
 * mailbox writer) shares them instead of copying a 25 MiB envelope once more.
 */
const SHARED_BODY_MIN_BYTES = 1024 * 1024;
// RFC 9110 §8.3.1: media-type = type "/" subtype parameters; the same token rules fastify applies
const TYPE_RE = /^[\w!#$%&'*+.^`|~-]+$/;
const SUBTYPE_RE = /^[\w!#$%&'*+.^`|~-]+\s*$/;

/** Bytes of a too-large body read and discarded before its 413 is answered. */
export const TOO_LARGE_DRAIN_BYTES = 64 * 1024 * 1024;

/** Options of {@link readRequestBody}. */
export interface BodyLimits {
  limitBytes: number;
  tooLargeCode: Extract<ErrorCode, 'payload_too_large' | 'envelope_too_large'>;
  /** The body must arrive within this from the start of reading (408 `request_timeout`); 0 or absent: no bound. */
  timeoutMs?: number;
}

/** Where a body's bytes are reserved before they are read (src/http/body-budget.ts). */
export interface BodyHold {
  /** Reserves `bytes` more (`whole`: the body's whole announced length); the refusal (503 or 429) when they do not fit. */
  grow(bytes: number, whole?: boolean): DdnError | undefined;
}

/** A body failure; `closeConnection` when unread bytes may still follow on the socket. */
export class BodyError extends Error {
  constructor(
    readonly error: DdnError,
    readonly closeConnection: boolean,
  ) {
    super(error.message);
  }
}

/** True for the methods whose body is never read (`GET`, `HEAD`, `TRACE`). */
export function isBodyless(method: string): boolean {
  return BODYLESS.has(method);
}

/** True iff `value` is a syntactically valid media type (parameters are not checked). */
export function isValidMediaType(value: string): boolean {
  const semi = value.indexOf(';');
  const essence = (semi < 0 ? value : value.slice(0, semi)).trimStart();
  const slash = essence.indexOf('/');
  if (slash < 0) return false;
  return TYPE_RE.test(essence.slice(0, slash)) && SUBTYPE_RE.test(essence.slice(slash + 1));
}

/** The 413; `closeConnection` unless the whole body was read. */
function tooLarge(limits: BodyLimits, closeConnection = true): BodyError {
  const e = new DdnError(limits.tooLargeCode, `request body exceeds ${limits.limitBytes} bytes`, {
    limit_bytes: limits.limitBytes,
  });
  return new BodyError(e, closeConnection);
}

/**
 * The 413 of a request announcing (by `Content-Length`) a body over the limit, for answering an
 * `Expect: 100-continue` request before its client sends the body; `undefined` when it may be sent.
 */
export function refusedBeforeBody(req: IncomingMessage, limits: BodyLimits): BodyError | undefined {
  const declared = Number(req.headers['content-length']);
  return declared > limits.limitBytes ? tooLarge(limits) : undefined;
}

function timedOut(limits: BodyLimits): BodyError {
  const e = new DdnError('request_timeout', `request body did not arrive within ${limits.timeoutMs} ms`, { timeout_ms: limits.timeoutMs });
  return new BodyError(e, true);
}

function malformed(): BodyError {
  return new BodyError(new DdnError('invalid_request', 'malformed request'), true);
}

/**
 * The body bytes of `req`, or `undefined` for a bodyless method or a request that announces no body. Rejects
 * with a {@link BodyError}. With `hold`, the bytes are reserved there before they are read: a `Content-Length`
 * body's whole length at once (refused without reading a byte of it), a chunked body's bytes as they arrive.
 */
export function readRequestBody(req: IncomingMessage, limits: BodyLimits, hold?: BodyHold): Promise<Buffer | undefined> {
  const method = req.method ?? 'GET';
  if (BODYLESS.has(method)) return Promise.resolve(undefined);
  const headers = req.headers;
  const ct = headers['content-type'];
  const lengthHeader = headers['content-length'];
  if (ct === undefined) {
    if (headers['transfer-encoding'] === undefined && (lengthHeader === undefined || lengthHeader === '0')) {
      return Promise.resolve(undefined);
    }
  } else if (!isValidMediaType(ct)) {
    return Promise.reject(new BodyError(new DdnError('unsupported_media_type'), false));
  }
  const declared = lengthHeader === undefined ? Number.NaN : Number(lengthHeader);
  if (declared > TOO_LARGE_DRAIN_BYTES) return Promise.reject(tooLarge(limits));
  // a body over the limit is only counted while it is drained, never held: it reserves nothing
  const refused = declared > 0 && declared <= limits.limitBytes ? hold?.grow(declared, true) : undefined;
  if (refused !== undefined) return Promise.reject(new BodyError(refused, true));
  return new Promise((resolve, reject) => {
    // With a Content-Length the bytes go straight into one buffer of that size (allocated when the first bytes
    // arrive), so a large body is held once, not as chunks plus their concatenation.
    let into: Buffer | undefined;
    let chunks: Buffer[] = [];
    let received = 0;
    // over the limit: the bytes are only counted until the body ends (then 413) or passes the drain bound
    let discarding = declared > limits.limitBytes;
    const timeoutMs = limits.timeoutMs ?? 0;
    const timer = timeoutMs > 0 ? setTimeout(() => fail(discarding ? tooLarge(limits) : timedOut(limits)), timeoutMs) : undefined;
    const detach = () => {
      if (timer !== undefined) clearTimeout(timer);
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      req.removeListener('error', onError);
    };
    const fail = (e: BodyError) => {
      detach();
      reject(e);
    };
    const onData = (chunk: Buffer | string) => {
      const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      if (!discarding && received + b.length > limits.limitBytes) {
        discarding = true;
        into = undefined;
        chunks = [];
      }
      if (discarding) {
        received += b.length;
        if (received > TOO_LARGE_DRAIN_BYTES) fail(tooLarge(limits));
        return;
      }
      if (Number.isNaN(declared)) {
        const over = hold?.grow(b.length);
        if (over !== undefined) return fail(new BodyError(over, true));
        chunks.push(b);
      } else {
        if (received + b.length > declared) return fail(malformed());
        into ??= declared >= SHARED_BODY_MIN_BYTES ? Buffer.from(new SharedArrayBuffer(declared)) : Buffer.allocUnsafe(declared);
        b.copy(into, received);
      }
      received += b.length;
    };
    const onEnd = () => {
      detach();
      // the whole body was read: the connection can serve the next request
      if (discarding) reject(tooLarge(limits, !Number.isNaN(declared) && received !== declared));
      else if (Number.isNaN(declared)) resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received));
      else if (received !== declared) reject(malformed());
      else resolve(into ?? Buffer.alloc(0));
    };
    const onError = () => fail(malformed());
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.resume();
  });
}
