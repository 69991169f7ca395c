/**
 * `GET /ready` on every role, for load balancers and orchestrators: 200 while every dependency of this process
 * answers (the Directory a Relay- or Cache-only process asks, the database, a writable data directory), else 503
 * `service_unavailable` naming each failing dependency and why. `GET /ready/writes` adds one check: the node takes
 * new data (not degraded by a full disk, when writes are answered 507 but reads go on; on a PostgreSQL Directory,
 * its ledger replica not out of storage, when admissions are answered 507) — for a load balancer that
 * sends writes only to nodes that take them while `/ready` keeps a degraded node serving reads
 * (docs/operations.md, "Health and readiness"). Also the probe of a remote Directory that `/health` reports on.
 */
import { ReadySchema, type ReadyResponse } from '../wire/meta.js';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import type { Clock } from '../base/clock.js';
import { DdnError } from '../base/errors.js';
import { json, type HttpServer } from '../http/server.js';
import { asIs, defineRoute } from '../http/route.js';

/** One dependency: resolves to null when it is usable, else to the reason it is not. Never rejects. */
export interface ReadinessCheck {
  readonly name: string;
  check(): Promise<string | null>;
}

/** How long one check may take before it counts as failed. */
export const CHECK_TIMEOUT_MS = 2000;

/** `work()`'s failure as a reason, a timeout included. */
export async function reasonOf(work: () => Promise<unknown>, timeoutMs = CHECK_TIMEOUT_MS): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
  });
  try {
    return await Promise.race([
      work().then(
        () => null,
        (err: unknown) => (err instanceof Error ? err.message : String(err)),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The data directory is writable. */
export function storageCheck(dataDir: string): ReadinessCheck {
  return { name: 'storage', check: () => reasonOf(() => access(dataDir, constants.W_OK)) };
}

/** The `writes` check of `/ready/writes`: failing while the node refuses new data for lack of storage. */
export function writesCheck(refusal: () => string | null): ReadinessCheck {
  return { name: 'writes', check: () => Promise.resolve(refusal()) };
}

/**
 * Why the node refuses new data now, or null: its data directory's disk full (the storage guard degraded), or —
 * a PostgreSQL Directory — its ledger replica out of storage (a quota or a file-size limit the guard does not
 * see), so that its catch-ups fail and its admissions are answered 507.
 */
export function writesRefusal(storage: { readonly isDegraded: boolean }, replica?: { readonly replicaOutOfStorage: boolean }): () => string | null {
  return () => {
    if (storage.isDegraded) return 'refused: the data directory is full, new data is answered 507 insufficient_storage';
    if (replica?.replicaOutOfStorage === true) return "refused: this process's ledger replica is out of storage, changes are answered 507 insufficient_storage";
    return null;
  };
}

/** What a remote Directory's probe found. */
export interface DirectoryState {
  /** The Directory URL asked (the one that answered, when one did). */
  readonly url: string;
  readonly reachable: boolean;
  /** Its `/health` body when it answered. */
  readonly health?: Readonly<Record<string, unknown>>;
  /** Why it is not reachable. */
  readonly reason?: string;
}

/** Asks a remote Directory's `/health`; an answer is reused for `ttlMs`, concurrent probes share one request. */
export class DirectoryProbe {
  private last: { atMs: number; state: Promise<DirectoryState> } | undefined;

  constructor(
    private readonly port: { health(timeoutMs: number): Promise<{ url: string; body: Record<string, unknown> }>; readonly currentBase: string },
    private readonly clock: Clock,
    private readonly ttlMs = 1000,
  ) {}

  state(): Promise<DirectoryState> {
    const now = this.clock.nowMs();
    if (this.last !== undefined && now - this.last.atMs < this.ttlMs) return this.last.state;
    const state = this.port.health(CHECK_TIMEOUT_MS).then(
      ({ url, body }): DirectoryState => ({ url, reachable: true, health: body }),
      (err: unknown): DirectoryState => ({ url: this.port.currentBase, reachable: false, reason: err instanceof Error ? err.message : String(err) }),
    );
    this.last = { atMs: now, state };
    return state;
  }

  /** The readiness check of this Directory. */
  check(): ReadinessCheck {
    return {
      name: 'directory',
      check: async () => {
        const s = await this.state();
        return s.reachable ? null : `the Directory at ${s.url} does not answer: ${s.reason ?? 'unknown'}`;
      },
    };
  }
}

/** The 200 body of `/ready`. */
export type ReadyBody = ReadyResponse;

/** Runs every check; throws `service_unavailable` naming the failing ones when the node is not ready. */
export async function readiness(checks: readonly ReadinessCheck[], started: () => boolean): Promise<ReadyBody> {
  if (!started()) throw new DdnError('service_unavailable', 'the node is starting or shutting down', { checks: { node: 'not started' } });
  const results = await Promise.all(checks.map(async (c) => [c.name, await c.check()] as const));
  const failing = results.filter(([, reason]) => reason !== null);
  if (failing.length > 0) {
    throw new DdnError('service_unavailable', failing.map(([name, reason]) => `${name}: ${reason}`).join('; '), {
      checks: Object.fromEntries(results.map(([name, reason]) => [name, reason ?? 'ok'])),
    });
  }
  return { status: 'ready', checks: Object.fromEntries(results.map(([name]) => [name, 'ok' as const])) };
}

/** Adds `GET /ready` to `server`, and `GET /ready/writes` with `writes` checked too (route objects typed by `ReadySchema`). */
export function registerReadyRoute(server: HttpServer, checks: readonly ReadinessCheck[], started: () => boolean, writes: ReadinessCheck): void {
  const ready = (url: string, summary: string, all: readonly ReadinessCheck[]) =>
    defineRoute({
      method: 'GET',
      url,
      summary,
      tags: ['meta'],
      answers: { 200: ReadySchema },
      // its 503 `service_unavailable` is one of the codes every route lists
      errors: [],
      parse: asIs,
      handle: async () => json(200, await readiness(all, started)),
    });
  server.add([
    ready('/ready', 'Readiness: 503 with the reason while a dependency is unavailable', checks),
    ready('/ready/writes', 'Readiness for writes: also 503 while the node refuses new data (a full disk; reads go on)', [...checks, writes]),
  ]);
}
