/**
 * The OpenAPI contract checked on every answer a test reads from a test node (test/support/network.ts): while a
 * node runs, `fetch` (the tests', the SDK's, a mirror's genesis) and the nodes' own client of node-to-node requests
 * (`OutboundHttp.request`: the Relay's stores and forwards to a Cache, the Relay's and the Cache's remote Directory
 * lookups through src/adapters/directory-port-http.ts, event Send and Call) are wrapped, and every answer from a
 * checked node's roles is validated
 * against that role's served document (test/support/openapi-check.ts) — its body against the route's schema for
 * its status, so an error answer must carry a code the document lists for that route and status — and every
 * request body the node accepted (2xx) against the route's request schema. The node's `stop()` fails with the
 * violations.
 */
import { OutboundHttp, type OutboundRequest, type OutboundResponse } from '../../src/outbound/outbound-http.js';
import { recordAnswer } from './answered-codes.js';
import { exchangeProblems } from './exchange-check.js';
import { JSON_TYPES, OpenApiChecker, type OpenApiDocument } from './openapi-check.js';

const checkers = new Map<string, { checker: OpenApiChecker; violations: string[] }>();
let installed: typeof fetch | undefined;

function methodOf(input: Parameters<typeof fetch>[0], init: RequestInit | undefined): string {
  return (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
}

async function inspect(input: Parameters<typeof fetch>[0], init: RequestInit | undefined, res: Response): Promise<void> {
  const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
  const entry = checkers.get(url.origin);
  if (entry === undefined) return;
  const method = methodOf(input, init);
  const contentType = res.headers.get('content-type') ?? '';
  const answer = JSON_TYPES.test(contentType) && method !== 'HEAD' ? await res.clone().text() : undefined;
  const sent = typeof init?.body === 'string' ? init.body : undefined;
  entry.violations.push(...exchangeProblems(entry.checker, { method, path: url.pathname, status: res.status, contentType, answer, sent }));
}

/**
 * Checks one answer read without `fetch` (a refused WebSocket upgrade, an answer to a node's own request) against
 * the document of the role at `url`'s origin, when that origin is checked; `ws:` counts as `http:`.
 */
export function checkAnswer(url: string, method: string, status: number, body: unknown, contentType = 'application/json'): void {
  const u = new URL(url.replace(/^ws(s?):/, 'http$1:'));
  const entry = checkers.get(u.origin);
  if (entry !== undefined) recordAnswer(status, body);
  const problem = entry?.checker.problem(method.toUpperCase(), u.pathname, status, body, contentType);
  if (problem !== undefined) entry!.violations.push(problem);
}

const JSON_START = /^\s*[{[]/;

/** A node-to-node exchange: its answer (when JSON) and, accepted, its request body, against the target's document. */
function inspectOutbound(req: OutboundRequest, res: OutboundResponse): void {
  const url = new URL(req.url);
  if (!checkers.has(url.origin)) return;
  const text = res.body.toString('utf8');
  if (JSON_START.test(text)) {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      // a cut-off answer (over the client's cap) is the client's to refuse
      body = undefined;
    }
    if (body !== undefined) checkAnswer(req.url, req.method, res.status, body);
  }
  if (res.status < 300 && req.body !== undefined) {
    let sent: unknown;
    try {
      sent = JSON.parse(req.body.toString('utf8'));
    } catch {
      return;
    }
    const problem = checkers.get(url.origin)!.checker.requestProblem(req.method, url.pathname, sent);
    if (problem !== undefined) checkers.get(url.origin)!.violations.push(`node-to-node ${problem}`);
  }
}

let realOutbound: OutboundHttp['request'] | undefined;

/** Wraps `OutboundHttp.request` (every instance: the prototype's) until {@link restoreOutbound}. */
function wrapOutbound(): void {
  if (realOutbound !== undefined) return;
  const base = OutboundHttp.prototype.request;
  realOutbound = base;
  OutboundHttp.prototype.request = async function checkedRequest(this: OutboundHttp, req: OutboundRequest): Promise<OutboundResponse> {
    const res = await base.call(this, req);
    inspectOutbound(req, res);
    return res;
  };
}

function restoreOutbound(): void {
  if (realOutbound === undefined) return;
  OutboundHttp.prototype.request = realOutbound;
  realOutbound = undefined;
}

/** Checks every answer from `urls` (a node's roles) against their served documents until {@link stopChecking}. */
export async function checkContract(urls: readonly string[]): Promise<void> {
  const realFetch = installed ?? globalThis.fetch;
  for (const url of urls) {
    const res = await realFetch(`${url}/openapi.json`);
    const doc = (await res.json()) as OpenApiDocument;
    const origin = new URL(url).origin;
    // roles served on one listener: one document of all their paths
    const held = checkers.get(origin)?.checker.doc;
    const merged = held === undefined ? doc : { ...doc, paths: { ...held.paths, ...doc.paths } };
    checkers.set(origin, { checker: new OpenApiChecker(merged), violations: checkers.get(origin)?.violations ?? [] });
  }
  wrapOutbound();
  if (installed !== undefined) return;
  installed = globalThis.fetch;
  const base = installed;
  globalThis.fetch = async (input, init) => {
    const res = await base(input, init);
    await inspect(input, init, res);
    return res;
  };
}

/** Stops checking `urls`; throws with the violations their answers showed. */
export function stopChecking(urls: readonly string[]): void {
  const violations: string[] = [];
  for (const url of urls) {
    const origin = new URL(url).origin;
    violations.push(...(checkers.get(origin)?.violations ?? []));
    checkers.delete(origin);
  }
  if (checkers.size === 0 && installed !== undefined) {
    globalThis.fetch = installed;
    installed = undefined;
  }
  if (checkers.size === 0) restoreOutbound();
  if (violations.length > 0) throw new Error(`answers or accepted requests not described by the OpenAPI documents:\n${[...new Set(violations)].join('\n')}`);
}

/** The base URLs a started node listens on (each role's; roles sharing a listener once each). */
export function urlsOf(node: { urls: Partial<Record<string, string | undefined>> }): string[] {
  return [...new Set(Object.values(node.urls).filter((u): u is string => u !== undefined))];
}

/**
 * `node` with every answer read from it checked (see {@link checkContract}) until it is closed: its `close()` then
 * fails with the violations seen.
 */
export async function checkedNode<T extends { urls: Partial<Record<string, string | undefined>>; close(): Promise<void> }>(node: T): Promise<T> {
  const urls = urlsOf(node);
  await checkContract(urls);
  const close = node.close.bind(node);
  let closing: Promise<void> | undefined;
  return Object.assign(node, { close: () => (closing ??= close().then(() => stopChecking(urls))) });
}
