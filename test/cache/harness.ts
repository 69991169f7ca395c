/**
 * A Cache over a real SQLite mailbox in a temp dir, its DIDs registered through the real Directory and
 * ledger (in-process, LocalDirectoryPort), served by the real fastify server and driven by inject().
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { toBase64, utf8 } from '../../src/base/bytes.js';
import type { ManualClock } from '../../src/base/clock.js';
import { DdnError } from '../../src/base/errors.js';
import { CacheEventHub, type CacheStoredEvent } from '../../src/cache/events.js';
import { registerCacheRoutes } from '../../src/cache/routes.js';
import { CacheService } from '../../src/cache/service.js';
import { MAX_RESPONSE_ENVELOPE_BYTES, type CacheSettings } from '../../src/cache/settings.js';
import type { Ed25519KeyPair } from '../../src/crypto/ed25519.js';
import { LocalDirectoryPort } from '../../src/directory/local-port.js';
import type { RateLimits } from '../../src/http/rate-limit.js';
import { createHttpServer, type HttpServer } from '../../src/http/server.js';
import { injectContract } from '../support/inject-contract.js';
import type { DeliveryConstraints } from '../../src/protocol/constraints.js';
import type { Profile } from '../../src/protocol/profile.js';
import type { DeliveryView, DidView, DirectoryPort, PolicyView } from '../../src/ports/directory-port.js';
import { signNodeRequest, type NodeIdentity } from '../../src/protocol/node-signature.js';
import { retrievalProofText, type ProofOperation } from '../../src/protocol/retrieval-proof.js';
import { SqliteMailboxStore } from '../../src/store/sqlite/mailbox-store.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { didOf, keyOf, kid, mutate, registerDid, vmOf } from '../support/directory-flows.js';

/** This Cache's public URL (`public_urls.cache`). */
export const CACHE_URL = 'https://cache.test.example';
export const OTHER_CACHE_URL = 'https://elsewhere.test.example';

type Body = Record<string, unknown>;

export interface Reply {
  status: number;
  body: Body;
  /** The response text. */
  text: string;
  headers: Record<string, unknown>;
}

/** ISO-8601 with seconds precision and `Z`, as deployed clients send proof timestamps. */
export function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** A DirectoryPort around the real one that tests can make fail or answer with a given policy/constraints. */
export class TestDirectoryPort implements DirectoryPort {
  /** Every lookup fails with a coded `policy_lookup_failed` (an unreachable remote Directory). */
  failing = false;
  /** Every lookup fails with an uncoded error (a local ledger whose database fails). */
  broken = false;
  policy: PolicyView | null = null;
  constraints: Partial<DeliveryConstraints> = {};
  /** Every lookup asked, with the request id it was asked for. */
  readonly asked: { lookup: 'getDid' | 'lookupAlias' | 'resolveDelivery'; key: string; requestId: string | undefined }[] = [];
  constructor(private readonly inner: DirectoryPort) {}

  private check(): void {
    if (this.failing) throw new DdnError('policy_lookup_failed', 'ledger unreachable (test)');
    if (this.broken) throw new Error('ledger database unavailable (test)');
  }

  async getDid(did: string, requestId?: string): Promise<DidView | null> {
    this.asked.push({ lookup: 'getDid', key: did, requestId });
    this.check();
    return this.inner.getDid(did);
  }

  async lookupAlias(alias: string, requestId?: string): Promise<string | null> {
    this.asked.push({ lookup: 'lookupAlias', key: alias, requestId });
    this.check();
    return this.inner.lookupAlias(alias);
  }

  async resolveDelivery(did: string, persona: string | null, tag: string | null, requestId?: string): Promise<DeliveryView | null> {
    this.asked.push({ lookup: 'resolveDelivery', key: did, requestId });
    this.check();
    const v = await this.inner.resolveDelivery(did, persona, tag);
    if (v === null) return null;
    const policy = this.policy ?? v.policy;
    const base = policy?.effectiveConstraints ?? v.effectiveConstraints;
    return { ...v, policy, effectiveConstraints: { ...base, ...this.constraints } };
  }
}

/** A registered recipient: `key` (`#key-1`, root, in authentication and in the Cache service authorization). */
export interface Recipient {
  did: string;
  key: Ed25519KeyPair;
  /** `#key-2`: in the Cache service authorization but not in `authentication`. */
  key2: Ed25519KeyPair;
  /** `#key-3`: in `authentication` but not in the Cache service authorization. */
  key3: Ed25519KeyPair;
  /** `#key-4`: authorised but of a non-Ed25519 type. */
  key4: Ed25519KeyPair;
  keyId: string;
  serviceId: string;
  archiveServiceId: string;
  alias: string;
}

/** A node (Relay) DID: `#relay` service of type PlatformRelayService authorising `#key-1`. */
export interface RelayNode extends NodeIdentity {
  /** `#key-2`, a VM not in the relay service's authorization. */
  key2: Ed25519KeyPair;
}

export interface RecipientOptions {
  /** Endpoints of the `#cache` service (default `[CACHE_URL + '/']`). */
  cacheEndpoints?: string[];
  /** No Cache service at all. */
  noCache?: boolean;
}

export interface CacheHarness {
  dir: DirectoryHarness;
  clock: ManualClock;
  port: TestDirectoryPort;
  store: SqliteMailboxStore;
  service: CacheService;
  server: HttpServer;
  settings: CacheSettings;
  hub: CacheEventHub;
  events: CacheStoredEvent[];
  registerRecipient(seed: number, opts?: RecipientOptions): Promise<Recipient>;
  registerRelay(seed: number): Promise<RelayNode>;
  deactivate(r: Recipient): Promise<void>;
  /** A valid envelope to `to` (overrides merged; `undefined` values delete the key). */
  envelope(to: string, over?: Body): Body;
  /** `POST /cache/store` with the envelope (or raw text) and extra headers. */
  storeRaw(body: Body | string, headers?: Record<string, string>): Promise<Reply>;
  /**
   * `POST /cache/store` with an envelope in a form the Cache accepts beyond its documented schema (§10.1.2's JSON
   * number `timestamp`): its answer is checked against the document, the accepted body is not.
   */
  storeLenient(body: Body): Promise<Reply>;
  /** Node-signed `POST /cache/store`. */
  storeAsNode(
    node: NodeIdentity,
    body: Body | string,
    over?: { url?: string; timestamp?: string; nonce?: string; signedBody?: string; headers?: Record<string, string> },
  ): Promise<Reply>;
  /** Retrieval-proof headers for `r`. */
  proof(r: Recipient, operation: ProofOperation, subject: string, over?: ProofOverrides): Record<string, string>;
  get(path: string, headers?: Record<string, string>): Promise<Reply>;
  post(path: string, body: Body | string, headers?: Record<string, string>): Promise<Reply>;
  /** `GET /cache/messages/{did}` with a fresh valid proof. */
  pull(r: Recipient): Promise<Reply>;
  summary(r: Recipient): Promise<Reply>;
  ack(r: Recipient, ids: string[], over?: ProofOverrides): Promise<Reply>;
  close(): Promise<void>;
}

export interface ProofOverrides {
  did?: string;
  keyId?: string;
  key?: Ed25519KeyPair;
  serviceId?: string;
  endpoint?: string;
  timestamp?: string;
  nonce?: string;
  deviceId?: string;
}

const enc = encodeURIComponent;

function reply(status: number, text: string, headers: Record<string, unknown> = {}): Reply {
  let body: Body = {};
  try {
    body = JSON.parse(text) as Body;
  } catch {
    // assertions on `body` fail loudly
  }
  return { status, body, text, headers };
}

export function recipientDocument(did: string, r: Pick<Recipient, 'key' | 'key2' | 'key3' | 'key4'>, o: RecipientOptions = {}): Body {
  const vm4 = { ...vmOf(did, 'key-4', r.key4), type: 'JsonWebKey2020' };
  const services: Body[] = o.noCache
    ? []
    : [
        {
          id: kid(did, 'cache'),
          type: 'PlatformCacheService',
          serviceEndpoint: o.cacheEndpoints ?? [`${CACHE_URL}/`],
          authorization: [kid(did, 'key-1'), kid(did, 'key-2'), kid(did, 'key-4')],
        },
        {
          id: kid(did, 'archive'),
          type: 'PlatformArchiveService',
          serviceEndpoint: [CACHE_URL],
          authorization: [kid(did, 'key-1')],
        },
      ];
  return {
    id: did,
    verificationMethod: [vmOf(did, 'key-1', r.key), vmOf(did, 'key-2', r.key2), vmOf(did, 'key-3', r.key3), vm4],
    authentication: [kid(did, 'key-1'), kid(did, 'key-3')],
    service: services,
  };
}

export interface HarnessOptions {
  maxRetentionSeconds?: number;
  chunkStagingWindowSeconds?: number;
  allowPlaintext?: boolean;
  proofClockSkewSeconds?: number;
  maxResponseEnvelopeBytes?: number;
  bodyLimitBytes?: number;
  maxBytesPerRecipient?: number;
  rateLimits?: RateLimits;
  /** The logger of the Cache (service, events and HTTP server); none by default. */
  logger?: Logger;
}

/** Registers a recipient through any Directory harness-like object (in-process or over HTTP). */
export async function registerRecipientAt(
  dir: Pick<DirectoryHarness, 'call' | 'settle' | 'profile'>,
  seed: number,
  opts: RecipientOptions = {},
): Promise<Recipient> {
  const did = didOf(seed, dir.profile.p);
  const keys = { key: keyOf(seed), key2: keyOf(seed + 50), key3: keyOf(seed + 100), key4: keyOf(seed + 150) };
  const alias = `cache${seed}`;
  await registerDid(dir as DirectoryHarness, seed, { did, key: keys.key, document: recipientDocument(did, keys, opts), alias });
  return { did, ...keys, keyId: kid(did, 'key-1'), serviceId: kid(did, 'cache'), archiveServiceId: kid(did, 'archive'), alias };
}

export async function startCache(o: HarnessOptions = {}): Promise<CacheHarness> {
  const dir = await startDirectory();
  const { clock, profile } = dir;
  const port = new TestDirectoryPort(new LocalDirectoryPort(dir.ledger, clock));
  const store = SqliteMailboxStore.open(join(dir.dir, 'cache.sqlite'));
  const settings: CacheSettings = {
    profile,
    publicCacheUrls: () => [CACHE_URL],
    maxEnvelopeBytes: o.bodyLimitBytes ?? 26_214_400,
    maxRetentionSeconds: o.maxRetentionSeconds ?? 172_800,
    chunkStagingWindowSeconds: o.chunkStagingWindowSeconds ?? 3600,
    allowPlaintext: o.allowPlaintext ?? true,
    proofClockSkewSeconds: o.proofClockSkewSeconds ?? 300,
    maxResponseEnvelopeBytes: o.maxResponseEnvelopeBytes ?? MAX_RESPONSE_ENVELOPE_BYTES,
    maxBytesPerRecipient: o.maxBytesPerRecipient ?? null,
  };
  const hub = new CacheEventHub(o.logger);
  const events: CacheStoredEvent[] = [];
  hub.on('CacheStored', (e) => events.push(e));
  const service = new CacheService({ store, directory: port, clock, settings, events: hub, ...(o.logger === undefined ? {} : { logger: o.logger }) });
  const server = createHttpServer({
    name: 'cache',
    logger: o.logger ?? false,
    bodyLimitBytes: settings.maxEnvelopeBytes,
    tooLargeCode: 'envelope_too_large',
    ...(o.rateLimits === undefined ? {} : { rateLimits: o.rateLimits }),
  });
  registerCacheRoutes(server, service, { nodeAuth: { profile, directory: port, nonces: store, clock } });
  await server.fastify.ready();

  const check = injectContract(server);
  const inject = async (method: 'GET' | 'POST', url: string, payload?: Body | string, headers: Record<string, string> = {}, lenient = false) => {
    const sent = payload === undefined ? undefined : typeof payload === 'string' ? payload : JSON.stringify(payload);
    const res = await server.fastify.inject({
      method,
      url,
      ...(sent === undefined ? { headers } : { payload: sent, headers: { 'content-type': 'application/json', ...headers } }),
    });
    await check({ method, url, status: res.statusCode, contentType: res.headers['content-type'], text: res.body, payload: lenient ? undefined : sent });
    return reply(res.statusCode, res.body, res.headers);
  };

  const h: CacheHarness = {
    dir,
    clock,
    port,
    store,
    service,
    server,
    settings,
    hub,
    events,
    registerRecipient(seed, opts = {}) {
      return registerRecipientAt(dir, seed, opts);
    },
    async registerRelay(seed) {
      const did = didOf(seed, profile.p);
      const key = keyOf(seed);
      const key2 = keyOf(seed + 50);
      const document = {
        id: did,
        verificationMethod: [vmOf(did, 'key-1', key), vmOf(did, 'key-2', key2)],
        authentication: [kid(did, 'key-1')],
        service: [
          { id: kid(did, 'relay'), type: 'PlatformRelayService', serviceEndpoint: ['https://relay.test.example'], authorization: [kid(did, 'key-1')] },
          { id: kid(did, 'cache'), type: 'PlatformCacheService', serviceEndpoint: [CACHE_URL], authorization: [kid(did, 'key-1')] },
        ],
      };
      await registerDid(dir, seed, { did, key, document });
      return { did, serviceId: kid(did, 'relay'), keyId: kid(did, 'key-1'), key, key2 };
    },
    async deactivate(r) {
      await mutate(dir, r.did, r.key, 'deactivate_did');
    },
    envelope(to, over = {}) {
      const env: Body = {
        message_id: randomUUID(),
        to,
        tag: 'invoice',
        timestamp: isoSeconds(clock.nowMs()),
        ttl: '24h',
        payload: { profile: `${profile.p}:cbor-chunk:x25519-hkdf-sha256-chacha20poly1305:v1`, ciphertext_b64: '3q2+7w==' },
        ...over,
      };
      for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
      return env;
    },
    storeRaw(body, headers = {}) {
      return inject('POST', '/cache/store', body, headers);
    },
    storeLenient(body) {
      return inject('POST', '/cache/store', body, {}, true);
    },
    storeAsNode(node, body, over = {}) {
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      const headers = signNodeRequest(profile, node, {
        method: 'POST',
        url: over.url ?? `${CACHE_URL}/cache/store`,
        body: over.signedBody ?? text,
        timestamp: over.timestamp ?? isoSeconds(clock.nowMs()),
        nonce: over.nonce ?? randomUUID(),
      });
      return inject('POST', '/cache/store', text, { ...headers, ...over.headers });
    },
    proof(r, operation, subject, over = {}) {
      return proofHeaders(profile, r, operation, subject, { endpoint: CACHE_URL, nowMs: clock.nowMs(), ...over });
    },
    get(path, headers = {}) {
      return inject('GET', path, undefined, headers);
    },
    post(path, body, headers = {}) {
      return inject('POST', path, body, headers);
    },
    pull(r) {
      return h.get(`/cache/messages/${enc(r.did)}`, h.proof(r, 'pull', '*'));
    },
    summary(r) {
      return h.get(`/cache/summary/${enc(r.did)}`, h.proof(r, 'summary', '*'));
    },
    ack(r, ids, over = {}) {
      const p = h.proof(r, 'ack', [...new Set(ids)].sort().join(','), over);
      return h.post('/cache/ack', ackBody(p, over.did ?? r.did, ids, over.deviceId ?? ''));
    },
    async close() {
      await server.fastify.close();
      await store.close();
      await dir.close();
    },
  };
  return h;
}

/** The body of `POST /cache/ack` (§11.6) carrying the proof of `headers` (from {@link proofHeaders}). */
export function ackBody(headers: Record<string, string>, did: string, messageIds: readonly string[], deviceId = ''): Record<string, unknown> {
  return {
    did,
    device_id: deviceId,
    service_id: headers['X-Service-Id'],
    cache_endpoint: headers['X-Cache-Endpoint'],
    key_id: headers['X-Key-Id'],
    timestamp: headers['X-Timestamp'],
    nonce: headers['X-Nonce'],
    signature_b64: headers['X-Signature'],
    message_ids: messageIds,
  };
}

/** The six retrieval-proof headers (§11.4), named: what a generated client's header parameters require. */
export type ProofHeaders = {
  'X-Service-Id': string;
  'X-Cache-Endpoint': string;
  'X-Key-Id': string;
  'X-Timestamp': string;
  'X-Nonce': string;
  'X-Signature': string;
};

/** Signed retrieval-proof headers (§11.4) for `r`; `endpoint` and `nowMs` fill the defaults. */
export function proofHeaders(
  profile: Profile,
  r: Pick<Recipient, 'did' | 'key' | 'keyId' | 'serviceId'>,
  operation: ProofOperation,
  subject: string,
  over: ProofOverrides & { endpoint: string; nowMs: number },
): ProofHeaders {
  const did = over.did ?? r.did;
  const timestamp = over.timestamp ?? isoSeconds(over.nowMs);
  const nonce = over.nonce ?? randomUUID();
  const serviceId = over.serviceId ?? r.serviceId;
  const keyId = over.keyId ?? r.keyId;
  const text = retrievalProofText(profile, {
    operation,
    did,
    deviceId: over.deviceId ?? '',
    serviceId,
    cacheEndpoint: over.endpoint,
    keyId,
    timestamp,
    nonce,
    subject,
  });
  return {
    'X-Service-Id': serviceId,
    'X-Cache-Endpoint': over.endpoint,
    'X-Key-Id': keyId,
    'X-Timestamp': timestamp,
    'X-Nonce': nonce,
    'X-Signature': toBase64((over.key ?? r.key).sign(utf8(text))),
  };
}

/** Asserts a §0.6 error body. */
export function expectError(res: Reply, status: number, code: string): void {
  if (res.status !== status || res.body.code !== code || res.body.error !== code || typeof res.body.message !== 'string') {
    throw new Error(`expected ${status} ${code}, got ${res.status} ${res.text}`);
  }
}
