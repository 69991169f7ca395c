/**
 * A Relay over a real SQLite staging store in a temp dir, its DIDs registered through the real Directory and
 * ledger (in-process, injected clock), its own Cache in-process (a real CacheService and mailbox), served by
 * the real fastify server and driven by inject(). Outbound stores to other endpoints are real HTTP.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { localCachePort } from '../../src/app/local-cache.js';
import type { ManualClock } from '../../src/base/clock.js';
import { CacheService } from '../../src/cache/service.js';
import { MAX_RESPONSE_ENVELOPE_BYTES, type CacheSettings } from '../../src/cache/settings.js';
import { LocalDirectoryPort } from '../../src/directory/local-port.js';
import type { RateLimits } from '../../src/http/rate-limit.js';
import { createHttpServer, type HttpServer } from '../../src/http/server.js';
import { injectContract } from '../support/inject-contract.js';
import type { DidDocument } from '../../src/protocol/document.js';
import { signNodeRequest, type NodeIdentity } from '../../src/protocol/node-signature.js';
import type { Profile } from '../../src/protocol/profile.js';
import { HttpCacheStorer, type StoreRetryPolicy } from '../../src/relay/cache-store-client.js';
import type { DeliveryResult } from '../../src/relay/delivery-result.js';
import { BaseDidDeliveryExecutor, type DeliveryExecutor, type LivePush } from '../../src/relay/executor.js';
import { NO_REACH, type LiveReach } from '../../src/relay/live-sessions.js';
import { HttpRelayForwarder } from '../../src/relay/plan/forward.js';
import { PlanExecutor } from '../../src/relay/plan/executor.js';
import { nodeDocument, nodeIdentityOf } from '../../src/relay/node-identity.js';
import { OutboundHttp } from '../../src/outbound/outbound-http.js';
import { registerRelayRoutes } from '../../src/relay/routes.js';
import { registerCacheRoutes } from '../../src/cache/routes.js';
import type { SenderSignatureCheck } from '../../src/protocol/sender-signature.js';
import { RelayService, type RelayEvent } from '../../src/relay/service.js';
import type { RelaySettings } from '../../src/relay/settings.js';
import { SqliteMailboxStore } from '../../src/store/sqlite/mailbox-store.js';
import { SqliteRelayStagingStore } from '../../src/store/sqlite/relay-staging-store.js';
import { CACHE_URL, TestDirectoryPort, isoSeconds, registerRecipientAt, type Recipient, type RecipientOptions } from '../cache/harness.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { keyOf, registerDid } from '../support/directory-flows.js';

export { CACHE_URL, isoSeconds };
/** This Relay's public URL (`public_urls.relay`). */
export const RELAY_URL = 'https://relay.test.example';
/** Seed of the Relay's node key. */
export const RELAY_SEED = 200;

type Body = Record<string, unknown>;

export interface Reply {
  status: number;
  body: DeliveryResult & Body;
  text: string;
  headers: Record<string, unknown>;
}

/**
 * A LivePush that records what it was asked to push and reports `sessions` authenticated receivers plus
 * `unauthenticated` proof-less ones (`--relay-live-auth open`).
 */
export class RecordingLive implements LivePush {
  sessions = 0;
  unauthenticated = 0;
  readonly pushed: { did: string; text: string }[] = [];
  push(did: string, envelopeJson: string): LiveReach {
    this.pushed.push({ did, text: envelopeJson });
    return { sessions: this.sessions + this.unauthenticated, authenticated: this.sessions };
  }
  count(): number {
    return this.sessions + this.unauthenticated;
  }
  /** What other processes reached (none unless a test says so), and the pushes asked of them. */
  elsewhere: LiveReach = NO_REACH;
  readonly pushedElsewhere: { did: string; text: string }[] = [];
  pushElsewhere(did: string, envelopeJson: string): Promise<LiveReach> {
    this.pushedElsewhere.push({ did, text: envelopeJson });
    return Promise.resolve(this.elsewhere);
  }
}

export interface RelayHarnessOptions {
  rateLimits?: RateLimits;
  settings?: Partial<Omit<RelaySettings, 'profile' | 'publicRelayUrls'>>;
  plan?: DeliveryExecutor;
  allowPrivate?: boolean;
  storeRetry?: Partial<StoreRetryPolicy>;
  bodyLimitBytes?: number;
  /** Reopen an earlier harness's files (a restart). */
  dir?: string;
  /** The logger of the Relay and its in-process Cache (services, store client and HTTP server); none by default. */
  logger?: Logger;
  /** Settings of the Cache that differ from the Relay's. */
  cacheSettings?: Partial<Omit<CacheSettings, 'profile' | 'publicCacheUrls'>>;
  /** The sender-signature check of the Relay and the Cache (a test counts its calls). */
  verifySender?: SenderSignatureCheck;
  /**
   * Also serve the same Cache over real HTTP on a loopback port ({@link RelayHarness.cacheHttpUrl}, one of its public
   * URLs, not one of the Relay's own): a recipient publishing it is stored at over node-signed HTTP, as a split network.
   */
  cacheOverHttp?: boolean;
}

export interface RelayHarness {
  dir: DirectoryHarness;
  clock: ManualClock;
  profile: Profile;
  port: TestDirectoryPort;
  cacheService: CacheService;
  mailbox: SqliteMailboxStore;
  store: SqliteRelayStagingStore;
  service: RelayService;
  server: HttpServer;
  settings: RelaySettings;
  identity: NodeIdentity;
  live: RecordingLive;
  events: RelayEvent[];
  /** The Cache's HTTP URL with `cacheOverHttp` (else undefined). */
  cacheHttpUrl: string | undefined;
  registerRecipient(seed: number, opts?: RecipientOptions): Promise<Recipient>;
  /** A valid envelope to `to` (overrides merged; `undefined` values delete the key). */
  envelope(to: string, over?: Body): Body;
  /** `POST /relay` (or `/relay/{path}` when `path` is given) with the envelope or raw text. */
  post(body: Body | string, o?: { path?: string; headers?: Record<string, string> }): Promise<Reply>;
  /** Node-signed `POST /relay` as `node`. */
  postAsNode(node: NodeIdentity, body: Body, o?: { url?: string }): Promise<Reply>;
  /** Message ids the in-process Cache holds visibly for `did`. */
  cached(did: string): Promise<string[]>;
  /** Closes the relay, cache and directory; `keepDir` keeps the files for a restart. */
  close(keepDir?: boolean): Promise<void>;
}

/** The JSON form of a document for registration. */
export function documentJson(d: DidDocument): Body {
  return {
    id: d.id,
    verificationMethod: d.verificationMethod,
    authentication: d.authentication ?? [],
    ...(d.service === null ? {} : { service: d.service }),
  };
}

function reply(status: number, text: string, headers: Record<string, unknown>): Reply {
  let body = {} as DeliveryResult & Body;
  try {
    body = JSON.parse(text) as DeliveryResult & Body;
  } catch {
    // assertions on `body` fail loudly
  }
  return { status, body, text, headers };
}

export async function startRelay(o: RelayHarnessOptions = {}): Promise<RelayHarness> {
  const dir = await startDirectory(o.dir === undefined ? {} : { dir: o.dir });
  const { clock, profile } = dir;
  const port = new TestDirectoryPort(new LocalDirectoryPort(dir.ledger, clock));
  const mailbox = SqliteMailboxStore.open(join(dir.dir, 'cache.sqlite'));
  let cacheHttpUrl: string | undefined;
  const cacheSettings: CacheSettings = {
    profile,
    publicCacheUrls: () => (cacheHttpUrl === undefined ? [CACHE_URL] : [CACHE_URL, cacheHttpUrl]),
    maxEnvelopeBytes: 26_214_400,
    maxRetentionSeconds: 172_800,
    chunkStagingWindowSeconds: 3600,
    allowPlaintext: true,
    proofClockSkewSeconds: 300,
    maxResponseEnvelopeBytes: MAX_RESPONSE_ENVELOPE_BYTES,
    maxBytesPerRecipient: null,
    ...o.cacheSettings,
  };
  const logged = o.logger === undefined ? {} : { logger: o.logger };
  const verify = o.verifySender === undefined ? {} : { verifySender: o.verifySender };
  const cacheService = new CacheService({ store: mailbox, directory: port, clock, settings: cacheSettings, ...logged, ...verify });

  const identity = nodeIdentityOf(profile, keyOf(RELAY_SEED));
  if (o.dir === undefined) {
    await registerDid(dir, RELAY_SEED, { did: identity.did, key: identity.key, document: documentJson(nodeDocument(profile, identity, [RELAY_URL])) });
  }

  const settings: RelaySettings = {
    profile,
    publicRelayUrls: () => [RELAY_URL],
    maxHttpEnvelopeBytes: 26_214_400,
    maxUnchunkedMessageBytes: 16_777_216,
    maxChunkBytes: 2_097_152,
    stagingWindowSeconds: 3600,
    stagingMaxBytes: 64 * 1024 * 1024,
    stagingMaxSetsPerRecipient: 8,
    stagingMaxSetBytes: 64 * 1024 * 1024,
    stagingMaxBytesPerRecipient: 64 * 1024 * 1024,
    stagingMaxBytesPerSender: 64 * 1024 * 1024,
    stagingIdleSeconds: 300,
    proofClockSkewSeconds: 300,
    allowPlaintext: true,
    ...o.settings,
  };
  const store = SqliteRelayStagingStore.open(join(dir.dir, 'relay.sqlite'));
  const outbound = new OutboundHttp({ allowPrivate: o.allowPrivate ?? true });
  const storer = new HttpCacheStorer({
    profile,
    clock,
    identity,
    outbound,
    ownCacheUrls: () => [CACHE_URL],
    local: localCachePort(cacheService, clock, 300, { sharedDidRecords: true }),
    retry: { attempts: 2, backoffMs: 1, timeoutMs: 2000, ...o.storeRetry },
    sleep: async () => undefined,
    ...logged,
  });
  const live = new RecordingLive();
  const events: RelayEvent[] = [];
  const service = new RelayService({
    settings,
    directory: port,
    store,
    clock,
    executors: {
      base: new BaseDidDeliveryExecutor({ profile, identity, storer, live }),
      plan:
        o.plan ??
        new PlanExecutor({
          profile,
          identity,
          directory: port,
          storer,
          forwarder: new HttpRelayForwarder({ profile, clock, identity, outbound, timeoutMs: 2000, ...logged }),
        }),
    },
    events: (e) => events.push(e),
    ...logged,
    ...verify,
  });
  const server = createHttpServer({
    name: 'relay',
    logger: o.logger ?? false,
    bodyLimitBytes: o.bodyLimitBytes ?? settings.maxHttpEnvelopeBytes,
    tooLargeCode: 'envelope_too_large',
    ...(o.rateLimits === undefined ? {} : { rateLimits: o.rateLimits }),
  });
  registerRelayRoutes(server, service, { nodeAuth: { profile, directory: port, nonces: store, clock } });
  await server.fastify.ready();
  let cacheServer: HttpServer | undefined;
  if (o.cacheOverHttp === true) {
    cacheServer = createHttpServer({
      name: 'cache',
      logger: o.logger ?? false,
      bodyLimitBytes: cacheSettings.maxEnvelopeBytes,
      tooLargeCode: 'envelope_too_large',
    });
    registerCacheRoutes(cacheServer, cacheService, { nodeAuth: { profile, directory: port, nonces: mailbox, clock } });
    cacheHttpUrl = (await cacheServer.fastify.listen({ host: '127.0.0.1', port: 0 })).replace('localhost', '127.0.0.1');
  }

  const check = injectContract(server);
  const inject = async (url: string, payload: Body | string, headers: Record<string, string> = {}) => {
    const sent = typeof payload === 'string' ? payload : JSON.stringify(payload);
    const res = await server.fastify.inject({ method: 'POST', url, payload: sent, headers: { 'content-type': 'application/json', ...headers } });
    await check({ method: 'POST', url, status: res.statusCode, contentType: res.headers['content-type'], text: res.body, payload: sent });
    return reply(res.statusCode, res.body, res.headers);
  };

  return {
    dir,
    clock,
    profile,
    port,
    cacheService,
    mailbox,
    store,
    service,
    server,
    settings,
    identity,
    live,
    events,
    cacheHttpUrl,
    registerRecipient: (seed, opts = {}) => registerRecipientAt(dir, seed, opts),
    envelope(to, over = {}) {
      const env: Body = {
        message_id: randomUUID(),
        to,
        tag: 'invoice',
        timestamp: isoSeconds(clock.nowMs()),
        ttl: '24h',
        payload: { ciphertext_b64: '3q2+7w==' },
        ...over,
      };
      for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
      return env;
    },
    post(body, opts = {}) {
      return inject(opts.path === undefined ? '/relay' : `/relay/${opts.path}`, body, opts.headers);
    },
    postAsNode(node, body, opts = {}) {
      const text = JSON.stringify(body);
      const headers = signNodeRequest(profile, node, {
        method: 'POST',
        url: opts.url ?? `${RELAY_URL}/relay`,
        body: text,
        timestamp: isoSeconds(clock.nowMs()),
        nonce: randomUUID(),
      });
      return inject('/relay', text, headers);
    },
    async cached(did) {
      return (await mailbox.listSummary(did, clock.nowMs())).map((e) => e.messageId);
    },
    async close(keepDir = false) {
      await server.fastify.close();
      await cacheServer?.fastify.close();
      outbound.close();
      await store.close();
      await mailbox.close();
      await dir.close(keepDir);
    },
  };
}

/** Asserts a DeliveryResult failure body with `http_status` equal to the HTTP status. */
export function expectFailure(res: Reply, status: number, code: string): void {
  const b = res.body;
  const ok =
    res.status === status &&
    b.http_status === status &&
    b.code === code &&
    b.success === false &&
    b.delivery_mode === 'failed' &&
    typeof b.message === 'string' &&
    typeof b.retry_count === 'number' &&
    typeof b.cache_attempted === 'boolean' &&
    'cache_result' in b &&
    typeof b.details === 'object' &&
    b.details !== null;
  if (!ok) throw new Error(`expected ${status} ${code}, got ${res.status} ${res.text}`);
}

/** Asserts a successful DeliveryResult (202) with `code` and `mode`. */
export function expectSuccess(res: Reply, code: string, mode: string): void {
  const b = res.body;
  const ok = res.status === 202 && b.http_status === 202 && b.success === true && b.code === code && b.delivery_mode === mode;
  if (!ok) throw new Error(`expected 202 ${code}/${mode}, got ${res.status} ${res.text}`);
}
