/**
 * A contract-checking proxy in front of a child process's role (`ddn serve`, `ddn mirror`): an HTTP server on
 * 127.0.0.1:0 in the test's process that forwards every request to the child as it came (method, path, every
 * header as sent, bodies streamed both ways) and checks each exchange with the checks of the in-process nodes
 * (test/support/exchange-check.ts) against the child role's own `GET /openapi.json`, fetched once when the proxy
 * starts. A JSON answer is checked when its last byte has arrived, before the proxy passes that byte on, so the
 * test has read nothing the check has not seen. WebSocket upgrades are passed through untouched once the child
 * accepts them; a refused upgrade's answer is checked like any other. A failed exchange with the child (killed
 * mid-request) is a destroyed connection to the test, as it would be without the proxy.
 *
 * The test's connections to the proxy are the proxy's own: it passes on no `Connection` or `Keep-Alive` header of
 * the child's answer (hop-by-hop), and never closes an idle one itself — the client does (undici after 4 s).
 * Passing on the child's `Keep-Alive: timeout=72` while Node closed the proxy's idle connections after its default
 * 5 s made the test's client reuse, now and then, a connection the proxy was closing (`read ECONNRESET`, seen in
 * test/chain/substrate-network under load).
 *
 * Violations fail the test they happen in: a root `afterEach` of every test file that loads this module throws
 * with them (and a root `after` with any seen after the last test), so no check waits for the child to stop —
 * the suites SIGKILL their children.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { after, afterEach } from 'node:test';
import { request } from 'undici';
import { exchangeProblems } from './exchange-check.js';
import { JSON_TYPES, OpenApiChecker, type OpenApiDocument } from './openapi-check.js';

/** Request bodies over this many bytes are forwarded but not kept for the request-schema check. */
const KEEP_LIMIT = 8 * 1024 * 1024;

export interface CheckedProxy {
  /** The proxy's base URL, to hand the test instead of {@link target}. */
  readonly url: string;
  /** The child's base URL ('' until {@link PendingProxy.attach}). */
  readonly target: string;
  /** The violations this proxy saw and no hook has reported yet (taken: reported by the caller instead). */
  takeViolations(): string[];
  /** Stops listening and drops every connection (idempotent). */
  close(): void;
}

const unreported: { proxy: CheckedProxy; text: string }[] = [];

function take(filter: (p: CheckedProxy) => boolean): string[] {
  const taken: string[] = [];
  for (let i = unreported.length - 1; i >= 0; i--) {
    if (filter(unreported[i]!.proxy)) taken.unshift(unreported.splice(i, 1)[0]!.text);
  }
  return taken;
}

/** Every violation no hook has reported yet, taken (the caller reports them instead). */
export function takeAllViolations(): string[] {
  return take(() => true);
}

function failOnViolations(): void {
  const texts = takeAllViolations();
  if (texts.length > 0) {
    throw new Error(`answers or accepted requests of child processes not described by their OpenAPI documents:\n${[...new Set(texts)].join('\n')}`);
  }
}
afterEach(failOnViolations);
after(failOnViolations);

/** Collects chunks up to {@link KEEP_LIMIT} (undefined once over it). */
function keeper(): { add(chunk: Buffer): void; text(): string | undefined } {
  let chunks: Buffer[] | undefined = [];
  let size = 0;
  return {
    add(chunk) {
      size += chunk.length;
      if (size > KEEP_LIMIT) chunks = undefined;
      chunks?.push(chunk);
    },
    text: () => chunks && Buffer.concat(chunks).toString('utf8'),
  };
}

/** The role's served document, read from the child directly. */
async function documentOf(target: string): Promise<OpenApiDocument> {
  const res = await request(`${target}/openapi.json`);
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`GET ${target}/openapi.json: ${res.statusCode}`);
  }
  return (await res.body.json()) as OpenApiDocument;
}

/** Raw headers (name, value, …) without the hop-by-hop ones that describe the child's connection, not the proxy's. */
function endToEnd(rawHeaders: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (!/^(connection|keep-alive)$/i.test(rawHeaders[i]!)) kept.push(rawHeaders[i]!, rawHeaders[i + 1]!);
  }
  return kept;
}

/** An HTTP/1.1 head (status line and header lines) from a parsed answer's raw headers. */
function headOf(status: number, message: string, rawHeaders: readonly string[]): string {
  let head = `HTTP/1.1 ${status} ${message}\r\n`;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) head += `${rawHeaders[i]}: ${rawHeaders[i + 1]}\r\n`;
  return `${head}\r\n`;
}

/** A proxy listening before its child runs (so the child can be told the proxy's URL as its public one). */
export interface PendingProxy extends CheckedProxy {
  /** Points the proxy at the child role at `target` (e.g. `http://127.0.0.1:40123`) and reads its document. */
  attach(target: string): Promise<void>;
}

/** Starts a checking proxy in front of the child role at `target`. */
export async function checkedProxy(target: string): Promise<CheckedProxy> {
  const proxy = await pendingProxy();
  try {
    await proxy.attach(target);
  } catch (e) {
    proxy.close();
    throw e;
  }
  return proxy;
}

/** Starts a checking proxy with no child yet: it refuses connections' requests until attached. */
export async function pendingProxy(): Promise<PendingProxy> {
  let checker = new OpenApiChecker({ openapi: '3.1.0', paths: {} });
  let to = new URL('http://127.0.0.1:1');
  let target = '';
  const agent = new http.Agent({ keepAlive: true });
  const sockets = new Set<Duplex>();
  const track = (s: Duplex): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };
  let proxy: PendingProxy;
  const check = (method: string, path: string, up: IncomingMessage, answer: string | undefined, sent: string | undefined): void => {
    const contentType = up.headers['content-type'] ?? '';
    const exchange = { method, path: path.split('?')[0]!, status: up.statusCode ?? 0, contentType, answer, sent };
    for (const text of exchangeProblems(checker, exchange)) unreported.push({ proxy, text });
  };
  const upstream = (req: IncomingMessage, opts: http.RequestOptions = {}): http.ClientRequest =>
    http.request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.rawHeaders, agent, ...opts });

  const forward = (req: IncomingMessage, res: ServerResponse): void => {
    const method = req.method ?? 'GET';
    const sent = keeper();
    const out = upstream(req);
    req.on('data', (c: Buffer) => sent.add(c));
    req.pipe(out);
    out.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    out.on('response', (up) => {
      res.writeHead(up.statusCode ?? 502, up.statusMessage, endToEnd(up.rawHeaders));
      const keep = JSON_TYPES.test(up.headers['content-type'] ?? '') && method !== 'HEAD' ? keeper() : undefined;
      up.on('data', (c: Buffer) => keep?.add(c));
      up.pipe(res, { end: false });
      up.on('end', () => {
        check(method, req.url ?? '/', up, keep?.text(), sent.text() || undefined);
        res.end();
      });
      up.on('close', () => {
        if (!up.complete) res.destroy();
      });
    });
  };

  const server = http.createServer(forward);
  // idle connections are closed by the client, never under its feet (see the module comment)
  server.keepAliveTimeout = 0;
  server.on('connection', track);
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    track(socket);
    const out = upstream(req, { agent: false });
    socket.on('error', () => out.destroy());
    out.on('error', () => socket.destroy());
    out.on('upgrade', (up, upSocket: Socket, upHead: Buffer) => {
      track(upSocket);
      upSocket.on('error', () => socket.destroy());
      socket.on('close', () => upSocket.destroy());
      upSocket.on('close', () => socket.destroy());
      socket.write(headOf(up.statusCode ?? 101, up.statusMessage ?? '', up.rawHeaders));
      if (upHead.length > 0) socket.write(upHead);
      if (head.length > 0) upSocket.write(head);
      upSocket.pipe(socket).pipe(upSocket);
    });
    out.on('response', (up) => {
      // a refused upgrade: an ordinary answer, checked, then passed on whole and the connection closed
      const body = keeper();
      up.on('data', (c: Buffer) => body.add(c));
      up.on('end', () => {
        check(req.method ?? 'GET', req.url ?? '/', up, body.text(), undefined);
        const raw: string[] = [];
        for (let i = 0; i + 1 < up.rawHeaders.length; i += 2) {
          if (!/^(content-length|transfer-encoding|connection)$/i.test(up.rawHeaders[i]!)) raw.push(up.rawHeaders[i]!, up.rawHeaders[i + 1]!);
        }
        const bytes = Buffer.from(body.text() ?? '');
        raw.push('Content-Length', String(bytes.length), 'Connection', 'close');
        socket.end(Buffer.concat([Buffer.from(headOf(up.statusCode ?? 502, up.statusMessage ?? '', raw)), bytes]));
      });
    });
    out.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let closed = false;
  proxy = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get target() {
      return target;
    },
    async attach(url) {
      checker = new OpenApiChecker(await documentOf(url));
      to = new URL(url);
      target = url;
    },
    takeViolations: () => take((p) => p === proxy),
    close() {
      if (closed) return;
      closed = true;
      server.close();
      for (const s of sockets) s.destroy();
      agent.destroy();
    },
  };
  return proxy;
}

/**
 * A proxy in front of each distinct URL of `urls` (a child's roles) — for a role of `pending`, that proxy, opened
 * before the child (whose public URL it may be) — all closed as soon as `proc` exits (also by SIGKILL); `urls` with
 * each URL replaced by its proxy's.
 */
export async function checkedUrls<K extends string>(
  urls: Partial<Record<K, string>>,
  proc: { once(event: 'exit', listener: () => void): unknown; exitCode: number | null; signalCode: NodeJS.Signals | null },
  pending: Partial<Record<K, PendingProxy>> = {},
): Promise<Partial<Record<K, string>>> {
  const proxies = new Map<string, CheckedProxy>();
  const closeAll = (): void => {
    for (const p of [...proxies.values(), ...Object.values<PendingProxy | undefined>(pending)]) p?.close();
  };
  proc.once('exit', closeAll);
  try {
    for (const [role, url] of Object.entries<string | undefined>(urls)) {
      if (url === undefined || proxies.has(url)) continue;
      const opened = pending[role as K];
      if (opened !== undefined) await opened.attach(url);
      proxies.set(url, opened ?? (await checkedProxy(url)));
    }
  } catch (e) {
    closeAll();
    throw e;
  }
  if (proc.exitCode !== null || proc.signalCode !== null) closeAll();
  const out: Partial<Record<K, string>> = {};
  for (const [role, url] of Object.entries<string | undefined>(urls)) if (url !== undefined) out[role as K] = proxies.get(url)!.url;
  return out;
}
