/**
 * `GET` of a JSON answer over keep-alive HTTP(S) (node:http's agents), for a process that asks another node on
 * every request it serves — the Relay's and the Cache's remote Directory (`directory-port-http.ts`). Node's `fetch`
 * cost ~330 µs of CPU a lookup here, node:http about a fifth of that (round 13). Bounded: a whole answer must
 * arrive within the timeout and be at most {@link MAX_ANSWER_BYTES}.
 */
import http from 'node:http';
import https from 'node:https';

/** The largest answer read (a Directory's delivery view with a full document and policy is a few KiB). */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** A status and the body's JSON value. */
export interface JsonAnswer {
  status: number;
  body: unknown;
}

/** Keep-alive GETs of JSON answers. */
export class KeepAliveJson {
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 64 });

  /** Rejects on a transport failure, a timeout, a body that is too large or not JSON; never on a status. */
  get(url: string, timeoutMs: number): Promise<JsonAnswer> {
    const u = new URL(url);
    const secure = u.protocol === 'https:';
    if (!secure && u.protocol !== 'http:') return Promise.reject(new Error(`unsupported scheme ${u.protocol}`));
    return new Promise((resolve, reject) => {
      const req = (secure ? https : http).get(u, { agent: secure ? this.httpsAgent : this.httpAgent, headers: { accept: 'application/json' } }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_ANSWER_BYTES) req.destroy(new Error(`answer larger than ${MAX_ANSWER_BYTES} bytes`));
          else chunks.push(c);
        });
        res.on('end', () => {
          clearTimeout(timer);
          const status = res.statusCode ?? 0;
          try {
            resolve({ status, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown });
          } catch {
            reject(new Error(`HTTP ${status} without a JSON body`));
          }
        });
        res.on('error', (e) => {
          clearTimeout(timer);
          reject(e);
        });
      });
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      req.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
  }

  /** Closes the idle connections. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
