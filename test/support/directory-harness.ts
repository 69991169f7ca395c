/** A Directory over a real SQLite ledger in a temp dir, served by the real fastify server, driven by inject(). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/base/clock.js';
import { keyPairFromSeed, type Ed25519KeyPair } from '../../src/crypto/ed25519.js';
import { Ledger } from '../../src/ledger/chain.js';
import { registerDirectoryRoutes } from '../../src/directory/routes.js';
import { DirectoryService, type DirectoryDeps } from '../../src/directory/service.js';
import { SqliteDnsChallengeStore } from '../../src/store/sqlite/dns-challenge-store.js';
import type { RateLimits } from '../../src/http/rate-limit.js';
import { createHttpServer, type HttpObserver, type HttpServer } from '../../src/http/server.js';
import { makeProfile, type Profile } from '../../src/protocol/profile.js';
import { openSqlite, type SqliteDb } from '../../src/store/sqlite/database.js';
import { LEDGER_MIGRATIONS, SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';
import { injectContract } from './inject-contract.js';

export const T0 = 1_800_000_000_000;

export interface DirectoryHarness {
  dir: string;
  clock: ManualClock;
  profile: Profile;
  ledger: Ledger;
  server: HttpServer;
  service: DirectoryService;
  attestor: Ed25519KeyPair;
  call(method: string, url: string, payload?: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
  /** Produces blocks until the pool is empty. */
  settle(): void;
  /** Closes the server and database; `keepDir` leaves the files for a restart. */
  close(keepDir?: boolean): Promise<void>;
}

export function openLedger(dir: string, clock: ManualClock, profile: Profile, attestor: Ed25519KeyPair): { db: SqliteDb; ledger: Ledger } {
  const db = openSqlite(join(dir, 'ledger.sqlite'), LEDGER_MIGRATIONS, 'ledger');
  const ledger = new Ledger(new SqliteLedgerStore(db), {
    profile,
    genesis: { profile: profile.p, chainId: 'ddn-test', genesisTimeMs: T0, personaAttestors: [attestor.publicKey] },
    blockIntervalMs: 1000,
    finalityDepth: 0,
    clock,
    autoProduce: false,
  });
  return { db, ledger };
}

/** Optional Directory dependencies a test sets (DNS servers, private endpoints, no attestor, …). */
export type DirectoryOptions = Partial<Omit<DirectoryDeps, 'ledger' | 'profile' | 'clock'>>;

/**
 * `DirectoryHarness.call` on `server`: one request through fastify's inject (no socket), JSON in and out. Every
 * answer is checked against the server's OpenAPI document (test/support/openapi-check.ts): a body the document
 * does not describe fails the test that read it.
 */
export function injectCall(server: HttpServer): DirectoryHarness['call'] {
  const check = injectContract(server);
  return async (method, url, payload) => {
    const sent = payload === undefined ? undefined : JSON.stringify(payload);
    const res = await server.fastify.inject({
      method: method as 'GET',
      url,
      ...(sent === undefined ? {} : { payload: sent, headers: { 'content-type': 'application/json' } }),
    });
    const body = res.json() as Record<string, unknown>;
    await check({ method, url, status: res.statusCode, contentType: res.headers['content-type'], text: res.body, payload: sent });
    return { status: res.statusCode, body };
  };
}

export async function startDirectory(
  opts: {
    dir?: string;
    profile?: string;
    clock?: ManualClock;
    deps?: DirectoryOptions;
    rateLimits?: RateLimits;
    observer?: HttpObserver;
    moreRoutes?: (server: HttpServer, ledger: Ledger) => void;
  } = {},
): Promise<DirectoryHarness> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'ddn-dir-'));
  const clock = opts.clock ?? new ManualClock(T0 + 1000);
  const profile = makeProfile(opts.profile ?? 'platform');
  const attestor = keyPairFromSeed(new Uint8Array(32).fill(9));
  const { db, ledger } = openLedger(dir, clock, profile, attestor);
  const server = createHttpServer({
    name: 'directory',
    logger: false,
    bodyLimitBytes: 1_048_576,
    tooLargeCode: 'payload_too_large',
    ...(opts.rateLimits === undefined ? {} : { rateLimits: opts.rateLimits }),
    ...(opts.observer === undefined ? {} : { observer: opts.observer }),
  });
  // The genesis attestor signs persona attestations; DNS challenges live in the ledger database.
  const service = new DirectoryService({ ledger, profile, clock, attestor, challenges: new SqliteDnsChallengeStore(db), ...opts.deps });
  registerDirectoryRoutes(server, service);
  // routes are handed to fastify when it starts: the caller's own (health, metrics) go in before
  opts.moreRoutes?.(server, ledger);
  await server.fastify.ready();
  return {
    dir,
    clock,
    profile,
    ledger,
    server,
    service,
    attestor,
    call: injectCall(server),
    settle() {
      while (ledger.produceBlock()) clock.advance(1);
    },
    async close(keepDir = false) {
      ledger.stop();
      await server.fastify.close();
      db.close();
      if (!keepDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
