/**
 * `GET` of a JSON answer over keep-alive connections (OutboundHttp, one undici Agent), for a process that asks
 * another node on every request it serves — the Relay's and the Cache's remote Directory
 * (src/adapters/directory-port-http.ts). The Directory URLs are the operator's own, so private addresses are
 * allowed. Bounded: an answer must start and keep arriving within the timeout, and be at most
 * {@link MAX_ANSWER_BYTES} (a larger one is an error, never a cut-off JSON text).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { OutboundError, OutboundHttp } from './outbound-http.js';

/** The largest answer read (a Directory's delivery view with a full document and policy is a few KiB). */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** A status and the body's JSON value. */
export interface JsonAnswer {
  status: number;
  body: unknown;
}

/** Keep-alive GETs of JSON answers. */
export class KeepAliveJson {
  private readonly http = new OutboundHttp({ allowPrivate: true, maxResponseBytes: MAX_ANSWER_BYTES, oversize: 'fail' });

  /**
   * Rejects on a transport failure, a timeout, a body that is too large or not JSON; never on a status. Asked for a
   * request (`requestId`), it carries that request's id as `X-Request-Id`.
   */
  async get(url: string, timeoutMs: number, options: { requestId?: string } = {}): Promise<JsonAnswer> {
    let res;
    try {
      res = await this.http.request({ method: 'GET', url, headers: { accept: 'application/json' }, timeoutMs, requestId: options.requestId });
    } catch (e) {
      if (e instanceof OutboundError && e.kind === 'timeout') throw new Error(`no answer within ${timeoutMs} ms`, { cause: e });
      throw e;
    }
    // undici frees the connection a turn of the event loop after the answer ends: waiting for it lets back-to-back
    // lookups (a Relay's DID, then its delivery view) reuse one connection instead of opening a second.
    await nextTurn();
    try {
      return { status: res.status, body: JSON.parse(res.body.toString('utf8')) as unknown };
    } catch {
      throw new Error(`HTTP ${res.status} without a JSON body`);
    }
  }

  /** Closes the idle connections. */
  close(): void {
    this.http.close();
  }
}
