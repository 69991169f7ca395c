/**
 * A loopback proxy in front of a Directory that records every request it passes on: its path, the
 * `X-Request-Id` it was sent with and the one the Directory answered with (its own request's id, echoed).
 * Network tests point Relay- and Cache-only nodes at it (`--directory-url`) to see what they ask.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxiedRequest {
  path: string;
  /** The `X-Request-Id` the request was sent with. */
  sent: string | undefined;
  /** The id the Directory served it under (its response's `X-Request-Id`). */
  served: string | undefined;
}

export interface DirectoryProxy {
  url: string;
  /** Every request passed on, in the order answered. */
  readonly requests: ProxiedRequest[];
  /** How many requests' paths start with `prefix`. */
  asked(prefix: string): number;
  close(): Promise<void>;
}

export async function directoryProxy(target: string): Promise<DirectoryProxy> {
  const requests: ProxiedRequest[] = [];
  const to = new URL(target);
  const one = (v: string | string[] | undefined) => (typeof v === 'string' ? v : undefined);
  const server = http.createServer((req, res) => {
    const path = req.url ?? '';
    const out = http.request({ host: to.hostname, port: to.port, method: req.method, path, headers: req.headers }, (answer) => {
      requests.push({ path, sent: one(req.headers['x-request-id']), served: one(answer.headers['x-request-id']) });
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    asked: (prefix) => requests.filter((r) => r.path.startsWith(prefix)).length,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
