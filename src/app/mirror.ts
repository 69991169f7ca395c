/**
 * A read-only mirror of a Directory (`ddn mirror`, docs/mirrors.md): its own SQLite ledger in the data directory,
 * filled by following the primary's export stream and verifying every block (src/mirror/follower.ts), and the
 * Directory's read routes over it — the same DirectoryService the primary runs, so every read answers with the
 * primary's body. Writes are refused with the primary's URL. The mirror serves the export feed too, so mirrors
 * can follow mirrors, and `GET /metrics` (the HTTP and ledger families of a node, and how far it follows).
 */
import { SqliteDnsChallengeStore } from '../store/sqlite/dns-challenge-store.js';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { to0x } from '../base/bytes.js';
import { systemClock, type Clock } from '../base/clock.js';
import { blockHash, genesisHeader, type GenesisConfig } from '../ledger/block.js';
import { Ledger } from '../ledger/chain.js';
import { exportFeedParts } from '../directory/export-routes.js';
import type { FeedStream, FeedStreamLimits } from '../directory/export-stream.js';
import { registerDirectoryRoutes } from '../directory/routes.js';
import { DirectoryService } from '../directory/service.js';
import { json } from '../http/server.js';
import { asIs, defineRoute } from '../http/route.js';
import { createHttpServer, type HttpServer } from '../http/server.js';
import { BodyBudget, DEFAULT_BODY_BUDGET, type BodyBudgetSettings } from '../http/body-budget.js';
import { ConnectionGate, DEFAULT_CONNECTION_SETTINGS, type ConnectionSettings } from '../http/connections.js';
import { RateLimits, type RateLimitSettings } from '../http/rate-limit.js';
import { FeedFollower, type FollowerLimits } from '../mirror/follower.js';
import { readOnlyServer } from '../mirror/read-only.js';
import { makeProfile } from '../protocol/profile.js';
import { processMemoryBytes } from '../base/process-memory.js';
import { defaultLedgerCacheBytes } from '../store/ledger-cache-size.js';
import { LedgerFile } from '../store/sqlite/ledger-file.js';
import { SqliteLedgerStore } from '../store/sqlite/ledger-store.js';
import { hostForUrl, isLoopbackHost, rateLimitSettings } from './config.js';
import { NodeMetrics, registerMetricsRoute } from './metrics.js';
import { registerHealthRoute } from './health.js';
import { LEDGER_FILE } from './ledger-backend.js';
import { lockDataDir } from './data-dir-lock.js';
import { Lifecycle } from './lifecycle.js';
import { watchFeedStream } from './feed-stream-metrics.js';
import { DataDirError, GENESIS_FILE, parseGenesisFile, toGenesisFile } from './node-keys.js';
import { buildInfo } from './version.js';
import { MirrorStatusSchema } from '../wire/meta.js';

export interface MirrorOptions {
  /** The primary Directory's base URL. */
  from: string;
  dataDir: string;
  host: string;
  port: number;
  logger: Logger;
  clock?: Clock;
  /** Reconnect delays of the follower (tests). */
  retryMs?: { first: number; max: number };
  /** What the primary may cost the follower, and its timeouts (`--max-line-bytes`, …). */
  followerLimits?: Partial<FollowerLimits>;
  streamLimits?: Partial<FeedStreamLimits>;
  /** Largest request body (default 1 MiB; writes are refused anyway). */
  bodyLimitBytes?: number;
  /** Bearer token `GET /metrics` asks for; none: open on a loopback host only (as a node's). */
  metricsToken?: string | null;
  /** Open connections of the process and of one client address (`--max-connections*`; a node's defaults). */
  connectionCaps?: Pick<ConnectionSettings, 'maxConnections' | 'maxConnectionsPerAddress'>;
  /** Request bodies in flight, in the process and per client address (`--http-body-budget*-bytes`; a node's defaults). */
  bodyBudget?: BodyBudgetSettings;
  /** Request rate limits (`--rate-limit*`, `--trusted-proxies`; a node's defaults); null: off. */
  rateLimits?: RateLimitSettings | null;
}

export interface RunningMirror {
  /** Listening base URL. */
  readonly url: string;
  readonly ledger: Ledger;
  readonly follower: FeedFollower;
  close(): Promise<void>;
}

const GENESIS_TIMEOUT_MS = 10_000;
/** A genesis is a few hundred bytes; more is not one (and is not read). */
const GENESIS_MAX_BYTES = 64 * 1024;

/** The body of `res` as text, refused beyond `max` bytes before more of it is read. */
async function boundedText(res: Response, max: number, url: string): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += (chunk as Uint8Array).length;
    // leaving the loop cancels the rest of the body
    if (size > max) throw new DataDirError(`${url} answered more than ${max} bytes; is it a ddn Directory?`);
    chunks.push(chunk as Uint8Array);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The primary's genesis parameters and hash (`GET /export/genesis`). */
async function fetchGenesis(from: string): Promise<{ genesis: GenesisConfig; hash: string }> {
  const url = `${from.replace(/\/+$/, '')}/export/genesis`;
  const res = await fetch(url, { signal: AbortSignal.timeout(GENESIS_TIMEOUT_MS) });
  if (res.status !== 200) {
    await res.body?.cancel();
    throw new DataDirError(`${url} answered ${res.status}; is ${from} a ddn Directory?`);
  }
  const text = await boundedText(res, GENESIS_MAX_BYTES, url);
  const body = JSON.parse(text) as { genesis_hash?: unknown };
  return { genesis: parseGenesisFile(url, text), hash: String(body.genesis_hash) };
}

/**
 * The chain to mirror: the data directory's genesis.json (a restart; checked against the primary when it answers),
 * else the primary's, written there.
 */
async function mirrorGenesis(o: MirrorOptions): Promise<GenesisConfig> {
  const path = join(o.dataDir, GENESIS_FILE);
  const local = existsSync(path) ? parseGenesisFile(path, readFileSync(path, 'utf8')) : undefined;
  let remote: { genesis: GenesisConfig; hash: string } | undefined;
  try {
    remote = await fetchGenesis(o.from);
  } catch (err) {
    if (local === undefined) {
      throw new DataDirError(`cannot read the primary's genesis from ${o.from}: ${err instanceof Error ? err.message : String(err)}`);
    }
    o.logger.warn({ err: err instanceof Error ? err.message : String(err), from: o.from }, 'the primary does not answer; serving the local copy');
  }
  const g = local ?? remote!.genesis;
  const hash = to0x(blockHash(genesisHeader(g)));
  if (remote !== undefined && remote.hash !== hash) {
    throw new DataDirError(
      local === undefined
        ? `the primary's genesis parameters do not hash to its genesis hash ${remote.hash}`
        : `${path} holds chain ${hash}, but ${o.from} serves chain ${remote.hash}; use another --data-dir`,
    );
  }
  if (local === undefined) writeFileSync(path, `${JSON.stringify(toGenesisFile(g), null, 2)}\n`, { mode: 0o644, flag: 'wx' });
  return g;
}

export async function startMirror(o: MirrorOptions): Promise<RunningMirror> {
  const lifecycle = new Lifecycle((err) => o.logger.error({ err }, 'cleanup after a failed mirror start'));
  try {
    const mirror = await buildMirror(o, lifecycle);
    await lifecycle.start();
    o.logger.info({ url: mirror.url, from: o.from, genesis_hash: to0x(mirror.ledger.genesisHash), seq: mirror.follower.seq }, 'mirror started');
    return mirror;
  } catch (e) {
    await lifecycle.stop().catch((err: unknown) => o.logger.error({ err }, 'cleanup after a failed mirror start'));
    throw e;
  }
}

/**
 * The mirror's parts on `lifecycle`, in dependency order: the data directory's lock, the ledger database and the
 * ledger, the metrics, the HTTP server (listening on start) and the follower (started once the server listens).
 * Stopped in reverse: the follower first, the database and the lock last.
 */
async function buildMirror(o: MirrorOptions, lifecycle: Lifecycle): Promise<RunningMirror> {
  const clock = o.clock ?? systemClock;
  // one process per data directory (src/app/data-dir-lock.ts)
  const dirLock = lockDataDir(o.dataDir);
  lifecycle.add({ name: 'data-dir-lock', stop: () => dirLock.release() });
  const genesis = await mirrorGenesis(o);
  // the same page cache and checkpoints as a Directory's ledger (src/store/sqlite/ledger-file.ts)
  const ledgerFile = LedgerFile.open(join(o.dataDir, LEDGER_FILE), defaultLedgerCacheBytes(processMemoryBytes()));
  lifecycle.add({ name: 'ledger-db', stop: () => ledgerFile.close() });
  const profile = makeProfile(genesis.profile);
  // everything the mirror holds was final at the primary, so it is final here as soon as it is stored
  const ledger = new Ledger(new SqliteLedgerStore(ledgerFile.db, undefined, () => ledgerFile.afterCommit()), {
    profile,
    genesis,
    blockIntervalMs: 1000,
    finalityDepth: 0,
    clock,
    autoProduce: false,
  });
  lifecycle.add({ name: 'ledger', stop: () => ledger.stop() });
  const follower = new FeedFollower({
    from: o.from,
    ledger,
    logger: o.logger.child({ component: 'mirror' }),
    ...(o.retryMs === undefined ? {} : { retryMs: o.retryMs }),
    ...(o.followerLimits === undefined ? {} : { limits: o.followerLimits }),
  });
  const metrics = new NodeMetrics(buildInfo());
  metrics.sqliteCheckpoints('ledger', () => ledgerFile.checkpointerStats);
  lifecycle.add({ name: 'mirror-metrics', stop: watchMirror(metrics, ledger, follower, clock) });
  const { server, stream } = mirrorServer(o, { genesis, ledger, follower, metrics, clock });
  let url = '';
  lifecycle.add({
    name: 'http',
    start: async () => {
      await server.fastify.listen({ host: o.host, port: o.port });
      url = `http://${hostForUrl(o.host)}:${(server.fastify.server.address() as AddressInfo).port}`;
    },
    stop: () => server.fastify.close(),
  });
  // closed before the server, which otherwise waits for the open export streams
  lifecycle.add({ name: 'export-stream', stop: () => stream.close() });
  lifecycle.add({ name: 'follower', start: () => follower.start(), stop: () => follower.stop() });
  let closing: Promise<void> | undefined;
  return {
    get url() {
      return url;
    },
    ledger,
    follower,
    close: () => (closing ??= lifecycle.stop()),
  };
}

interface MirrorParts {
  genesis: GenesisConfig;
  ledger: Ledger;
  follower: FeedFollower;
  metrics: NodeMetrics;
  clock: Clock;
}

/**
 * The mirror's HTTP server: metrics, health (ready while it follows: not before it listens, not once following
 * stopped on a block that did not verify), its status, the Directory's read routes and the export feed.
 */
function mirrorServer(o: MirrorOptions, p: MirrorParts): { server: HttpServer; stream: FeedStream } {
  const rateSettings = o.rateLimits === undefined ? rateLimitSettings([], {}) : o.rateLimits;
  const rateLimits = rateSettings === null ? undefined : new RateLimits(rateSettings);
  if (rateLimits !== undefined) p.metrics.watchRateLimits(rateLimits);
  const server = createHttpServer({
    name: 'directory',
    logger: o.logger,
    bodyLimitBytes: o.bodyLimitBytes ?? 1024 * 1024,
    tooLargeCode: 'payload_too_large',
    observer: p.metrics.httpObserver('directory'),
    // a public mirror is bounded as a node is: its connections and the bodies it reads (a write is read, then refused)
    gate: new ConnectionGate(o.connectionCaps ?? DEFAULT_CONNECTION_SETTINGS),
    bodyBudget: new BodyBudget(o.bodyBudget ?? DEFAULT_BODY_BUDGET),
    // and its request rates (reads count against the `read` budget per client address)
    ...(rateLimits === undefined ? {} : { rateLimits }),
  });
  const service = new DirectoryService({
    ledger: p.ledger,
    profile: makeProfile(p.genesis.profile),
    clock: p.clock,
    challenges: SqliteDnsChallengeStore.inMemory(),
  });
  p.metrics.watchResolveAnswers(service.resolveCache);
  registerMetricsRoute(server, p.metrics, { token: o.metricsToken ?? null, loopback: isLoopbackHost(o.host) });
  const isReady = (): boolean => server.fastify.server.listening && p.follower.status().error === undefined;
  registerHealthRoute(server, { roles: ['directory'], profile: p.genesis.profile, chainId: p.genesis.chainId, ledger: p.ledger, isReady, build: buildInfo() });
  server.add([
    defineRoute({
      method: 'GET',
      url: '/mirror/status',
      summary: 'What the mirror follows and how far it is',
      tags: ['meta'],
      answers: { 200: MirrorStatusSchema },
      errors: [],
      parse: asIs,
      handle: () => json(200, p.follower.status()),
    }),
  ]);
  const exportFeed = exportFeedParts({
    ledger: p.ledger,
    genesis: p.genesis,
    logger: o.logger,
    ...(o.streamLimits === undefined ? {} : { streamLimits: o.streamLimits }),
  });
  registerDirectoryRoutes(readOnlyServer(server, o.from), service, exportFeed);
  watchFeedStream(p.metrics, exportFeed.stream);
  return { server, stream: exportFeed.stream };
}

/** The ledger's families and the follower's: what it holds, whether it is connected, when it last imported a block. */
function watchMirror(metrics: NodeMetrics, ledger: Ledger, f: FeedFollower, clock: Clock): () => void {
  const stopLedger = metrics.watchLedger(ledger);
  metrics.gauge('ddn_mirror_feed_seq', 'The last export-feed entry this mirror holds', (g) => g.set(f.seq));
  metrics.gauge('ddn_mirror_connected', "Whether the mirror is connected to the primary's export stream (1) or reconnecting (0)", (g) =>
    g.set(f.status().connected ? 1 : 0),
  );
  metrics.gauge('ddn_mirror_verification_failed', "1 once the primary's feed did not verify and following stopped (see GET /mirror/status)", (g) =>
    g.set(f.status().error === undefined ? 0 : 1),
  );
  const imported = metrics.gauge('ddn_mirror_last_import_timestamp_seconds', 'When the mirror last imported a block (Unix seconds; 0: none since start)');
  imported.set(0);
  const stopProgress = f.onProgress(() => imported.set(clock.nowMs() / 1000));
  return () => {
    stopLedger();
    stopProgress();
  };
}
