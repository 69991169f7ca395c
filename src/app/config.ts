/**
 * Node configuration (http-api.md §0.1): command-line flags and matching `DDN_*` environment variables, read
 * once into a typed, deeply frozen {@link Config}. Flags win over the environment. Pure: the caller passes
 * `argv` and `env`; nothing here touches `process`.
 */
import { NETWORK_ID_PATTERN } from '../ledger/anchor-batch.js';
import { isIP } from 'node:net';
import { DEFAULT_READ_CACHE_LIMITS } from '../cache/read-cache.js';
import { DEFAULT_DIRECTORY_VIEW_TTL_MS } from '../adapters/directory-view-cache.js';
import { LIVE_AUTH_MODES, type LiveAuthMode } from '../relay/live-auth.js';
import { DEFAULT_LIVE_LIMITS } from '../relay/live-sessions.js';
import {
  DEFAULT_RATE_BUDGETS,
  DEFAULT_RATE_MAX_KEYS,
  formatRateBudget,
  parseRateBudget,
  RATE_BUDGETS,
  trustedProxyList,
  type RateBudget,
  type RateBudgetName,
  type RateLimitSettings,
} from '../http/rate-limit.js';
import { DEFAULT_RESERVE_BYTES } from '../store/storage-guard.js';
import { DEFAULT_EVENT_BUDGET_PER_OWNER } from '../events/limits.js';
import { DEFAULT_CONNECTION_SETTINGS as HTTP, type ConnectionSettings } from '../http/connections.js';
import { DEFAULT_MAX_IN_FLIGHT } from '../http/hand-over.js';
import { STAGING_DEFAULTS as STAGING } from '../relay/settings.js';
import { DEFAULT_BODY_BUDGET as BODIES, type BodyBudgetSettings } from '../http/body-budget.js';
import { DEFAULT_FEED_STREAM_LIMITS as FEED } from '../directory/export-stream.js';
import { defaultResolveCacheBytes } from '../directory/resolve-cache.js';
import { defaultLedgerCacheBytes, MIN_LEDGER_CACHE_BYTES } from '../store/ledger-cache-size.js';
import { processMemoryBytes } from '../base/process-memory.js';

/** The three HTTP roles a node can run. */
export type Role = 'directory' | 'relay' | 'cache';
/** All roles, in their canonical order. */
export const ROLES: readonly Role[] = Object.freeze(['directory', 'relay', 'cache'] as const);

/** Built-in network profiles (http-api.md §0.2). */
export type ProfileName = 'platform' | 'openpayload';
const PROFILES: readonly ProfileName[] = ['platform', 'openpayload'];

/** pino log levels. */
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** How log lines are written: `auto` is `pretty` on a terminal, else `json`. */
export type LogFormat = 'auto' | 'pretty' | 'json';
const LOG_FORMATS: readonly LogFormat[] = ['auto', 'pretty', 'json'];

/** The validated configuration of one node. Every nested object and array is frozen. */
export interface Config {
  /** Directory holding `ledger.sqlite`, `attestor.key` and `genesis.json`. */
  readonly dataDir: string;
  /** Interface every role listens on (without IPv6 brackets). */
  readonly host: string;
  /** Enabled roles, canonical order, at least one. */
  readonly roles: readonly Role[];
  /** Listening port per role; 0 picks a free port. */
  readonly ports: Readonly<Record<Role, number>>;
  readonly profile: ProfileName;
  readonly chainId: string;
  /** `block_interval_ms`. */
  readonly blockIntervalMs: number;
  /** `finality_depth`. */
  readonly finalityDepth: number;
  /**
   * Where the Directory's ledger takes its order from (`--ledger`): `embedded` (this process's blocks, or the
   * PostgreSQL producer with `--db`) or `substrate` (a Substrate chain every Directory of the network follows,
   * docs/chain.md); then `chain` says which chain, which account and which network.
   */
  readonly ledger: 'embedded' | 'substrate';
  /** SQLite page cache of the ledger file's connection (`--ledger-cache-bytes`; docs/operations.md, "The ledger file"). */
  readonly ledgerCacheBytes: number;
  /**
   * `--ledger-admission-wait-ms`: on a PostgreSQL ledger (`--db`), the longest an admission batch waits for others to
   * share its statement and commit (default 30; 0: never). The wait adapts to the recent arrivals
   * (src/store/postgres/admission-wait.ts). docs/deployment.md, "Directory writes on PostgreSQL".
   */
  readonly ledgerAdmissionWaitMs: number;
  /**
   * On a PostgreSQL ledger: `--ledger-hand-over` (`on`: a process that does not produce the blocks hands its writes
   * to the one that does) and `--ledger-peer-url` (where the others reach this process when it produces; null: its
   * Directory's listening URL, unless it listens on every interface). docs/deployment.md, "One writer".
   */
  readonly ledgerHandOver: { readonly on: boolean; readonly peerUrl: string | null; readonly maxInFlight: number };
  readonly chain: {
    /** `--chain-url`: WebSocket endpoints of one chain, tried in turn. */
    readonly urls: readonly string[];
    /** `--chain-key`: the account key file the Directory submits from. */
    readonly keyFile: string;
    /** `--network`: the network definition every Directory of the network shares; null: the chain's default network. */
    readonly networkFile: string | null;
    /** `--network-id` of the default network (without `--network`). */
    readonly networkId: string;
  } | null;
  readonly logLevel: LogLevel;
  /** `--log-format`. */
  readonly logFormat: LogFormat;
  /** One `request completed` line per request at `info` (`--access-log`). */
  readonly accessLog: boolean;
  /** Bearer token `GET /metrics` asks for (`--metrics-token`); null: none (open on loopback only). */
  readonly metricsToken: string | null;
  /** `public_urls.*`; empty means "the role's own listening base URL" (resolved when the node listens). */
  readonly publicUrls: { readonly relay: readonly string[]; readonly cache: readonly string[] };
  /** `proof_clock_skew_seconds`. */
  readonly proofClockSkewSeconds: number;
  readonly policy: { readonly allowPrivateEndpoints: boolean };
  /**
   * Event processing (http-api.md §10.9): the Relays a Send step posts its control envelope to, and how many
   * events one policy owner's rules may run per minute on this node (`--event-budget-per-owner`).
   */
  readonly events: { readonly relayUrls: readonly string[]; readonly budgetPerOwnerPerMinute: number };
  /**
   * Base URLs of a Directory in other processes (`--directory-url`, repeatable or comma-separated), in order;
   * empty: none. When given and this node does not run the Directory role, the Relay and the Cache ask it over
   * HTTP — starting at the URL that last answered, moving to the next when one fails — and the node identity is
   * registered there; otherwise they read this node's own ledger.
   */
  readonly directoryUrl: readonly string[];
  /**
   * How long the Relay and the Cache reuse a remote Directory's answers (`--directory-view-ttl-ms`; a winning
   * policy's `policy_ttl_seconds` shortens it; 0: ask every time). Unused without `--directory-url`.
   */
  readonly directoryViewTtlMs: number;
  /** Timeouts of every listener and connection caps of the process (`--http-*-timeout-ms`, `--max-connections*`). */
  readonly http: Readonly<ConnectionSettings>;
  /** Memory for request bodies in flight, in the process and per client address (`--http-body-budget*-bytes`). */
  readonly bodyBudget: Readonly<BodyBudgetSettings>;
  /** PostgreSQL for the Cache mailbox and the Relay staging store (`--db`); null: SQLite files in the data dir. */
  readonly db: { readonly url: string; readonly schema: string } | null;
  readonly directory: {
    readonly maxBodyBytes: number;
    readonly dnsServers: readonly string[];
    /** Memory for rendered `GET /resolve` bodies (`--directory-resolve-cache-bytes`; 0: none kept). */
    readonly resolveCacheBytes: number;
    /** Sessions of `GET /export/stream` and their ping rule (`--export-stream-*`, docs/mirrors.md). */
    readonly exportStream: { readonly maxSessions: number; readonly maxSessionsPerAddress: number; readonly pingIntervalMs: number };
  };
  readonly relay: {
    /** Body limit of the Relay and the Cache (http-api.md §0.3). */
    readonly maxHttpEnvelopeBytes: number;
    /** This Relay's advertised payload limit of unchunked envelopes (§10.3 step 11). */
    readonly maxUnchunkedMessageBytes: number;
    /** This Relay's advertised payload limit of one chunk (§10.3 step 11). */
    readonly maxChunkBytes: number;
    readonly stagingWindowSeconds: number;
    /** Chunk staging capacity of the node, in envelope bytes (§10.4.3). */
    readonly stagingMaxBytes: number;
    /** Chunk sets staged at once per recipient DID (§10.4.3). */
    readonly stagingMaxSetsPerRecipient: number;
    /** Envelope bytes of one staged set, judged from its announced total at its first chunk (beyond: 413). */
    readonly stagingMaxSetBytes: number;
    /** Envelope bytes staged for one recipient DID. */
    readonly stagingMaxBytesPerRecipient: number;
    /** Envelope bytes staged by one sender DID (an unsigned set: its client address). */
    readonly stagingMaxBytesPerSender: number;
    /** A set that got no chunk for this long is dropped when staging needs its room. */
    readonly stagingIdleSeconds: number;
    readonly maxSessionsPerDid: number;
    /** Who may open a live session (`--relay-live-auth`; default by profile: platform `required`, openpayload `open`). */
    readonly liveAuth: LiveAuthMode;
    /** Live sessions on this process, pending ones included. */
    readonly liveMaxSessions: number;
    /** Bytes buffered for one live session before it is closed as not reading. */
    readonly liveMaxSessionBufferedBytes: number;
    /** Bytes buffered for every live session together. */
    readonly liveMaxBufferedBytes: number;
    /** Live sessions are pinged this often; one that left the last ping unanswered is closed. */
    readonly livePingIntervalMs: number;
    /** How long a `?auth=first-frame` session has to send its proof. */
    readonly liveAuthTimeoutMs: number;
  };
  readonly cache: {
    readonly maxRetentionSeconds: number;
    readonly chunkStagingWindowSeconds: number;
    /** `cbor_b64` plaintext payloads accepted by the Relay and the Cache (default: only on profile openpayload). */
    readonly allowPlaintext: boolean;
    /** Unexpired envelope bytes a Cache holds per recipient DID (0: no quota). */
    readonly maxBytesPerRecipient: number;
    /** Memory for pages and summaries of unchanged mailboxes (SQLite mailbox; 0: none). */
    readonly readCacheBytes: number;
    /** Storage the whole mailbox may take before stores answer 507 `insufficient_storage` (0: only the disk's). */
    readonly storageBudgetBytes: number;
  };
  /** Request rate limits of every role (`--rate-limit*`, `--trusted-proxies`); null: off. */
  readonly rateLimit: RateLimitSettings | null;
  /** Bytes of the data directory's disk held back for a full disk (`storage.reserve`; 0: none). */
  readonly storageReserveBytes: number;
}

/** An invalid flag or environment value. `option` is the flag it concerns, e.g. `--directory-port`. */
export class ConfigError extends Error {
  constructor(
    message: string,
    readonly option: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

type OptionKind = 'value' | 'list' | 'switch';

type DefaultValue = string | number | boolean;

/**
 * One flag: `loadConfig` reads `default` when the flag is not given, and the help shows it. `defaultText` is the
 * help's default column where the default is not a plain value (it depends on another option, or there is none).
 */
type OptionSpec = {
  readonly name: string;
  readonly kind: OptionKind;
  readonly arg: string;
  readonly help: string;
} & ({ readonly default: DefaultValue; readonly defaultText?: string } | { readonly default?: undefined; readonly defaultText: string });

const MAX_BODY_LIMIT = 1 << 30;
const YEAR_SECONDS = 31_536_000;
/** setTimeout's largest delay. */
const MAX_TIMER_MS = 2_147_483_647;

const OPTIONS: readonly OptionSpec[] = [
  { name: 'data-dir', kind: 'value', arg: 'PATH', default: './.ddn-data', help: 'ledger database and node keys' },
  { name: 'host', kind: 'value', arg: 'HOST', default: '127.0.0.1', help: 'interface every role listens on' },
  { name: 'roles', kind: 'list', arg: 'LIST', defaultText: ROLES.join(','), help: 'roles to run' },
  { name: 'directory-port', kind: 'value', arg: 'PORT', default: 8080, help: 'Directory port (0: any free port)' },
  { name: 'relay-port', kind: 'value', arg: 'PORT', default: 8081, help: 'Relay port (0: any free port)' },
  { name: 'cache-port', kind: 'value', arg: 'PORT', default: 8082, help: 'Cache port (0: any free port)' },
  { name: 'profile', kind: 'value', arg: 'NAME', default: 'platform', help: 'network profile: platform | openpayload' },
  { name: 'chain-id', kind: 'value', arg: 'ID', default: 'ddn-dev', help: 'chain id written into the genesis' },
  { name: 'block-time-ms', kind: 'value', arg: 'MS', default: 1000, help: 'block interval, at least 1' },
  { name: 'finality-depth', kind: 'value', arg: 'N', default: 0, help: 'blocks behind the head that are final' },
  {
    name: 'ledger',
    kind: 'value',
    arg: 'KIND',
    default: 'embedded',
    help: 'where the ledger takes its order from: embedded | substrate (a Substrate chain, docs/chain.md)',
  },
  {
    name: 'chain-url',
    kind: 'list',
    arg: 'URL',
    defaultText: 'none',
    help: 'ws(s):// endpoint of the chain (--ledger substrate; repeatable or comma-separated: tried in turn)',
  },
  { name: 'chain-key', kind: 'value', arg: 'FILE', defaultText: 'none', help: 'account key file the Directory submits from (--ledger substrate)' },
  {
    name: 'network',
    kind: 'value',
    arg: 'FILE',
    defaultText: 'none',
    help: 'network definition shared by every Directory of the network (--ledger substrate; ddn network init)',
  },
  {
    name: 'network-id',
    kind: 'value',
    arg: 'ID',
    default: 'ddn-dev',
    help: "without --network: the network id of the chain's default network (development chains; docs/chain.md)",
  },
  {
    name: 'public-relay-url',
    kind: 'list',
    arg: 'URL',
    defaultText: 'the Relay listening URL',
    help: 'Relay URL DID documents publish (repeatable or comma-separated)',
  },
  {
    name: 'public-cache-url',
    kind: 'list',
    arg: 'URL',
    defaultText: 'the Cache listening URL',
    help: 'Cache URL DID documents publish (repeatable or comma-separated)',
  },
  { name: 'proof-clock-skew-seconds', kind: 'value', arg: 'S', default: 300, help: 'retrieval-proof clock skew' },
  {
    name: 'allow-private-endpoints',
    kind: 'switch',
    arg: '',
    default: false,
    help: 'let delivery policies name private/loopback endpoints',
  },
  {
    name: 'directory-url',
    kind: 'list',
    arg: 'URL',
    defaultText: "this node's own ledger",
    help: 'Directory the Relay and Cache ask when this process does not run it (repeatable or comma-separated: tried in turn)',
  },
  {
    name: 'ledger-cache-bytes',
    kind: 'value',
    arg: 'BYTES',
    default: defaultLedgerCacheBytes(processMemoryBytes()),
    help: "SQLite page cache of the ledger file's connection, filled only as pages are read (default: 256 MiB, or 1/16 of memory or of the cgroup's limit when less)",
  },
  {
    name: 'directory-resolve-cache-bytes',
    kind: 'value',
    arg: 'BYTES',
    default: defaultResolveCacheBytes(processMemoryBytes()),
    help: 'memory for rendered GET /resolve answers, kept across blocks until a block changes what they read (default: 1/8 of memory; 0: none kept)',
  },
  {
    name: 'directory-view-ttl-ms',
    kind: 'value',
    arg: 'MS',
    default: DEFAULT_DIRECTORY_VIEW_TTL_MS,
    help: 'how long the Relay and Cache reuse answers of the --directory-url Directory (0: ask every time)',
  },
  {
    name: 'event-relay-url',
    kind: 'list',
    arg: 'URL',
    defaultText: "this node's Relay, else the recipient's",
    help: 'Relay that event Send steps post control envelopes to (repeatable or comma-separated)',
  },
  {
    name: 'event-budget-per-owner',
    kind: 'value',
    arg: 'N',
    default: DEFAULT_EVENT_BUDGET_PER_OWNER,
    help: "events one policy owner's event rules may run per minute on this node; further ones are dropped and counted",
  },
  {
    name: 'db',
    kind: 'value',
    arg: 'URL',
    defaultText: 'SQLite files in the data directory',
    help: 'postgres://… database for the ledger, DNS challenges, the Cache mailbox, the Relay staging and live fan-out (several processes of every role share it; a replica of the ledger stays in --data-dir)',
  },
  { name: 'db-schema', kind: 'value', arg: 'NAME', default: 'public', help: "PostgreSQL schema holding ddn's tables" },
  {
    name: 'ledger-admission-wait-ms',
    kind: 'value',
    arg: 'MS',
    default: 30,
    help: 'with --db: the longest a signed write waits for others to share its admission statement and commit (0-1000; 0: never); it waits only while recent writes say another is due before the cap and no sooner than a batch takes in the database, for two of their recent gaps',
  },
  {
    name: 'ledger-hand-over',
    kind: 'value',
    arg: 'on|off',
    default: 'on',
    help: 'with --db: a Directory process that does not produce the blocks hands its signed writes to the one that does (off: it admits them itself)',
  },
  {
    name: 'ledger-hand-over-max',
    kind: 'value',
    arg: 'N',
    default: DEFAULT_MAX_IN_FLIGHT,
    help: 'with --db: writes handed to the producer at once at most; beyond, this process admits a write itself (a busy producer is not queued behind)',
  },
  {
    name: 'ledger-peer-url',
    kind: 'value',
    arg: 'URL',
    defaultText: "the Directory's listening URL (none on a wildcard --host)",
    help: 'with --db: where the other Directory processes reach this one when it produces the blocks (http://host:port)',
  },
  {
    name: 'dns-server',
    kind: 'list',
    arg: 'HOST[:PORT]',
    defaultText: 'the system resolvers',
    help: 'DNS server the Directory asks for Persona TXT records (repeatable or comma-separated)',
  },
  { name: 'log-level', kind: 'value', arg: 'LEVEL', default: 'info', help: LOG_LEVELS.join(' | ') },
  {
    name: 'log-format',
    kind: 'value',
    arg: 'FORMAT',
    default: 'auto',
    defaultText: 'pretty on a terminal, else json',
    help: 'how log lines on stderr are written: pretty | json',
  },
  { name: 'access-log', kind: 'switch', arg: '', default: false, help: 'log one line per HTTP request (at info)' },
  {
    name: 'metrics-token',
    kind: 'value',
    arg: 'TOKEN',
    defaultText: 'none: /metrics open on a loopback host only',
    help: 'bearer token GET /metrics requires (set it on a public node)',
  },
  {
    name: 'http-headers-timeout-ms',
    kind: 'value',
    arg: 'MS',
    default: HTTP.headersTimeoutMs,
    help: "a connection must send a request's headers within this (one that sends nothing is closed)",
  },
  {
    name: 'http-request-timeout-ms',
    kind: 'value',
    arg: 'MS',
    default: HTTP.requestTimeoutMs,
    help: "a request's body must arrive within this after its headers (408 request_timeout; 0: no bound)",
  },
  {
    name: 'http-keep-alive-timeout-ms',
    kind: 'value',
    arg: 'MS',
    default: HTTP.keepAliveTimeoutMs,
    help: 'an idle kept-alive connection is closed after this',
  },
  {
    name: 'max-connections',
    kind: 'value',
    arg: 'N',
    default: HTTP.maxConnections,
    help: 'open connections of the process, all roles together (beyond: 503 and closed; 0: no cap)',
  },
  {
    name: 'max-connections-per-address',
    kind: 'value',
    arg: 'N',
    default: HTTP.maxConnectionsPerAddress,
    help: 'open connections of one client address, all roles together (beyond: 503 and closed; 0: no cap)',
  },
  {
    name: 'http-body-budget-bytes',
    kind: 'value',
    arg: 'BYTES',
    default: BODIES.maxBytes,
    help: 'request bodies in flight in the process, all roles together (beyond: 503 before the body is read; 0: no bound)',
  },
  {
    name: 'http-body-budget-per-address-bytes',
    kind: 'value',
    arg: 'BYTES',
    default: BODIES.maxBytesPerAddress,
    help: 'request bodies in flight from one client address, IPv6 per /64 (beyond: 429 before the body is read; 0: no bound)',
  },
  { name: 'directory-max-body-bytes', kind: 'value', arg: 'N', default: 1_048_576, help: 'Directory body limit' },
  {
    name: 'export-stream-max-sessions',
    kind: 'value',
    arg: 'N',
    default: FEED.maxSessions,
    help: 'GET /export/stream sessions of the Directory (beyond: 503, unless one that does not answer pings gives its place)',
  },
  {
    name: 'export-stream-max-sessions-per-address',
    kind: 'value',
    arg: 'N',
    default: FEED.maxSessionsPerAddress,
    help: 'GET /export/stream sessions of one client address (grouped like the rate limits; beyond: 503)',
  },
  {
    name: 'export-stream-ping-interval-ms',
    kind: 'value',
    arg: 'MS',
    default: FEED.pingIntervalMs,
    help: 'the export stream pings each session this often; one that has not answered when the next ping is due is closed',
  },
  { name: 'relay-max-envelope-bytes', kind: 'value', arg: 'N', default: 26_214_400, help: 'Relay/Cache body limit' },
  { name: 'relay-max-unchunked-bytes', kind: 'value', arg: 'N', default: 16_777_216, help: 'Relay payload limit (unchunked)' },
  { name: 'relay-max-chunk-bytes', kind: 'value', arg: 'N', default: 2_097_152, help: 'Relay payload limit (one chunk)' },
  { name: 'relay-staging-window-seconds', kind: 'value', arg: 'S', default: 3600, help: 'Relay chunk staging window' },
  { name: 'relay-staging-max-bytes', kind: 'value', arg: 'N', default: STAGING.maxBytes, help: 'Relay chunk staging capacity' },
  {
    name: 'relay-staging-max-sets-per-recipient',
    kind: 'value',
    arg: 'N',
    default: STAGING.maxSetsPerRecipient,
    help: 'chunk sets staged at once per recipient',
  },
  {
    name: 'relay-staging-max-set-bytes',
    kind: 'value',
    arg: 'N',
    default: STAGING.maxSetBytes,
    help: 'envelope bytes of one chunk set, judged from its announced total at its first chunk (beyond: 413)',
  },
  {
    name: 'relay-staging-max-bytes-per-recipient',
    kind: 'value',
    arg: 'N',
    default: STAGING.maxBytesPerRecipient,
    help: 'envelope bytes staged for one recipient (beyond: 429 staging_capacity_full)',
  },
  {
    name: 'relay-staging-max-bytes-per-sender',
    kind: 'value',
    arg: 'N',
    default: STAGING.maxBytesPerSender,
    help: 'envelope bytes staged by one sender DID, or one client address for unsigned sets (beyond: 429)',
  },
  {
    name: 'relay-staging-idle-seconds',
    kind: 'value',
    arg: 'S',
    default: STAGING.idleSeconds,
    help: 'a chunk set that got no chunk for this long is dropped when staging needs its room',
  },
  { name: 'relay-max-sessions-per-did', kind: 'value', arg: 'N', default: 8, help: 'live sessions per DID' },
  {
    name: 'relay-live-auth',
    kind: 'value',
    arg: 'MODE',
    defaultText: 'platform: required, openpayload: open',
    help: 'live sessions: required (prove control of the DID) | open (proof optional) | off (route disabled)',
  },
  { name: 'relay-live-max-sessions', kind: 'value', arg: 'N', default: 10_000, help: 'live sessions on this process (all DIDs)' },
  {
    name: 'relay-live-max-session-buffered-bytes',
    kind: 'value',
    arg: 'BYTES',
    default: 33_554_432,
    help: 'bytes buffered for one live session before it is closed as not reading',
  },
  {
    name: 'relay-live-max-buffered-bytes',
    kind: 'value',
    arg: 'BYTES',
    default: 268_435_456,
    help: 'bytes buffered for all live sessions (the furthest behind are closed beyond it)',
  },
  { name: 'relay-live-auth-timeout-ms', kind: 'value', arg: 'MS', default: 5000, help: 'deadline of a first-frame live-session proof' },
  {
    name: 'relay-live-ping-interval-ms',
    kind: 'value',
    arg: 'MS',
    default: DEFAULT_LIVE_LIMITS.pingIntervalMs,
    help: 'live sessions are pinged this often; one that has not answered when the next ping is due is closed',
  },
  { name: 'cache-max-retention-seconds', kind: 'value', arg: 'S', default: 172_800, help: 'longest Cache retention' },
  { name: 'cache-chunk-staging-window-seconds', kind: 'value', arg: 'S', default: 3600, help: 'Cache chunk window' },
  {
    name: 'cache-allow-plaintext',
    kind: 'switch',
    arg: '',
    defaultText: 'false on platform, true on openpayload',
    help: 'the Relay and the Cache accept cbor_b64 plaintext payloads (else 422 plaintext_not_allowed)',
  },
  {
    name: 'cache-max-bytes-per-recipient',
    kind: 'value',
    arg: 'BYTES',
    default: 1_073_741_824,
    help: 'unexpired envelope bytes held per recipient (429 storage_quota_exceeded beyond; 0: no quota)',
  },
  {
    name: 'cache-storage-budget-bytes',
    kind: 'value',
    arg: 'BYTES',
    default: 0,
    help: 'storage the whole mailbox may take (SQLite: pages of cache.sqlite in use; PostgreSQL: envelope bytes); 507 insufficient_storage beyond (0: no budget but the disk)',
  },
  {
    name: 'storage-reserve-bytes',
    kind: 'value',
    arg: 'BYTES',
    default: DEFAULT_RESERVE_BYTES,
    help: 'disk space held back in <data-dir>/storage.reserve and given back when the disk fills up (0: none)',
  },
  {
    name: 'cache-read-cache-bytes',
    kind: 'value',
    arg: 'BYTES',
    default: DEFAULT_READ_CACHE_LIMITS.maxBytes,
    help: 'memory for pages and summaries of unchanged mailboxes (SQLite mailbox; 0: off)',
  },
  {
    name: 'rate-limit',
    kind: 'value',
    arg: 'on|off|FACTOR',
    default: 'on',
    help: 'request rate limits: on, off, or every default budget multiplied by FACTOR (e.g. 10, 0.5)',
  },
  ...RATE_BUDGETS.map((b): OptionSpec => ({
    name: `rate-limit-${b}`,
    kind: 'value',
    arg: 'N/PERIOD|off',
    defaultText: formatRateBudget(DEFAULT_RATE_BUDGETS[b]),
    help: `requests of class ${b.replace(/-target$/, '')} per ${b.endsWith('-target') ? 'target' : 'client address'} (PERIOD: 10s, 1m, 1h)`,
  })),
  {
    name: 'rate-limit-max-keys',
    kind: 'value',
    arg: 'N',
    default: DEFAULT_RATE_MAX_KEYS,
    help: 'addresses or targets one budget tracks per process; beyond, new ones share one budget',
  },
  {
    name: 'trusted-proxies',
    kind: 'list',
    arg: 'IP|CIDR',
    defaultText: 'none',
    help: 'peers whose X-Forwarded-For names the client (repeatable or comma-separated)',
  },
];

/** The environment variable matching flag `--name`, e.g. `DDN_DIRECTORY_PORT`. */
export function envNameOf(name: string): string {
  return `DDN_${name.toUpperCase().replace(/-/g, '_')}`;
}

/** Help text of the configuration flags named in `only` (default: every one; `ddn serve --help`). */
export function configHelp(only?: readonly string[]): string {
  const rows = OPTIONS.filter((o) => only === undefined || only.includes(o.name)).map((o) => {
    const flag = o.kind === 'switch' ? `--${o.name}[=BOOL]` : `--${o.name} ${o.arg}`;
    // a flag longer than the column gets its help on the next line
    const lead = flag.length < 44 ? `  ${flag.padEnd(44)}` : `  ${flag}\n  ${''.padEnd(44)}`;
    return `${lead}${o.help} [${o.defaultText ?? String(o.default)}]\n  ${''.padEnd(44)}env ${envNameOf(o.name)}`;
  });
  return `Options (each also read from its DDN_* environment variable; flags win):\n${rows.join('\n')}\n`;
}

interface RawValue {
  readonly values: readonly string[];
  /** Where the value came from, for messages: `--host` or `DDN_HOST (--host)`. */
  readonly source: string;
}

function specOf(name: string): OptionSpec | undefined {
  return OPTIONS.find((o) => o.name === name);
}

/** The `default` of option `name` in {@link OPTIONS}; an option read without one of that type is a bug. */
function defaultOf(name: string, type: 'string'): string;
function defaultOf(name: string, type: 'number'): number;
function defaultOf(name: string, type: 'boolean'): boolean;
function defaultOf(name: string, type: 'string' | 'number' | 'boolean'): DefaultValue {
  const d = specOf(name)?.default;
  if (typeof d !== type) throw new Error(`--${name} has no ${type} default in OPTIONS`);
  return d!;
}

/** Collects the raw strings of every option: environment first, then flags replace them. */
function collect(argv: readonly string[], env: NodeJS.ProcessEnv): Map<string, RawValue> {
  const raw = new Map<string, RawValue>();
  for (const o of OPTIONS) {
    const v = env[envNameOf(o.name)];
    if (v !== undefined && v !== '') raw.set(o.name, { values: [v], source: `${envNameOf(o.name)} (--${o.name})` });
  }
  const fromFlags = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument '${arg}'`, arg);
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    const flag = `--${name}`;
    const spec = specOf(name);
    if (spec === undefined) throw new ConfigError(`unknown option ${flag}`, flag);
    let value: string;
    if (eq >= 0) value = arg.slice(eq + 1);
    else if (spec.kind === 'switch') value = 'true';
    else {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) throw new ConfigError(`${flag}: missing value`, flag);
      value = next;
      i++;
    }
    // A repeated list flag adds items; a repeated single-valued flag overrides (the last one wins).
    const prior = fromFlags.has(name) && spec.kind === 'list' ? raw.get(name)!.values : [];
    raw.set(name, { values: [...prior, value], source: flag });
    fromFlags.add(name);
  }
  return raw;
}

class Reader {
  constructor(private readonly raw: Map<string, RawValue>) {}

  private fail(name: string, problem: string): never {
    const source = this.raw.get(name)?.source ?? `--${name}`;
    throw new ConfigError(`${source}: ${problem}`, `--${name}`);
  }

  string(name: string, fallback = defaultOf(name, 'string')): string {
    const v = this.raw.get(name)?.values[0];
    if (v === undefined) return fallback;
    if (v.trim() === '') this.fail(name, 'must not be empty');
    return v;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback = defaultOf(name, 'string') as T): T {
    const v = this.string(name, fallback);
    if (!(allowed as readonly string[]).includes(v)) this.fail(name, `must be one of ${allowed.join(', ')}, got '${v}'`);
    return v as T;
  }

  int(name: string, min: number, max: number): number {
    const v = this.raw.get(name)?.values[0];
    if (v === undefined) return defaultOf(name, 'number');
    const n = /^\d+$/.test(v.trim()) ? Number(v.trim()) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      this.fail(name, `must be an integer from ${min} to ${max}, got '${v}'`);
    }
    return n;
  }

  bool(name: string, fallback = defaultOf(name, 'boolean')): boolean {
    const v = this.raw.get(name)?.values[0];
    if (v === undefined) return fallback;
    const s = v.trim().toLowerCase();
    if (s === '1' || s === 'true' || s === 'yes') return true;
    if (s === '0' || s === 'false' || s === 'no') return false;
    return this.fail(name, `must be true/false or 1/0, got '${v}'`);
  }

  /** Repeated and comma-separated values, trimmed; `undefined` when the option was not given. */
  list(name: string): string[] | undefined {
    const r = this.raw.get(name);
    if (r === undefined) return undefined;
    const items = r.values.flatMap((v) => v.split(',')).map((s) => s.trim());
    if (items.some((s) => s === '')) this.fail(name, `empty item in '${r.values.join(',')}'`);
    return items;
  }

  roles(): Role[] {
    const items = this.list('roles');
    if (items === undefined) return [...ROLES];
    for (const r of items) {
      if (!(ROLES as readonly string[]).includes(r)) this.fail('roles', `unknown role '${r}' (use ${ROLES.join(', ')})`);
    }
    return ROLES.filter((r) => items.includes(r));
  }

  host(): string {
    const v = this.string('host').trim();
    const bare = v.startsWith('[') && v.endsWith(']') ? v.slice(1, -1) : v;
    try {
      const u = new URL(`http://${hostForUrl(bare)}:1/`);
      if (u.pathname !== '/' || u.username !== '' || /[\s/@?#]/.test(bare)) throw new Error('not a host');
    } catch {
      this.fail('host', `not a host name or IP address: '${v}'`);
    }
    return bare;
  }

  /** `--metrics-token`: see {@link metricsTokenProblem}. */
  metricsToken(): string | null {
    const v = this.raw.get('metrics-token')?.values[0];
    if (v === undefined) return null;
    const problem = metricsTokenProblem(v);
    if (problem !== undefined) this.fail('metrics-token', problem);
    return v;
  }

  /** `--db postgres://…` and `--db-schema`. */
  database(): { url: string; schema: string } | null {
    const url = this.string('db', '');
    const schema = this.string('db-schema');
    if (url === '') return null;
    if (!/^postgres(ql)?:\/\//.test(url)) this.fail('db', `must be a postgres:// URL, got '${url}'`);
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) this.fail('db-schema', `must be a lowercase SQL identifier, got '${schema}'`);
    return { url, schema };
  }

  /** `host`, `host:port`, `[v6]` or `[v6]:port` entries, as node:dns `setServers` takes them. */
  dnsServers(name: string): string[] {
    const items = this.list(name) ?? [];
    for (const item of items) {
      const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(item);
      const port = m?.[3] === undefined ? 53 : Number(m[3]);
      if (!m || port < 1 || port > 65535 || (m[2] !== undefined && isIP(m[2]) === 0)) {
        this.fail(name, `must be an IP address with an optional port, got '${item}'`);
      }
    }
    return items;
  }

  /** `--rate-limit`, the per-budget overrides, `--rate-limit-max-keys` and `--trusted-proxies`; null when off. */
  rateLimit(): RateLimitSettings | null {
    const mode = this.string('rate-limit').trim().toLowerCase();
    let factor = 1;
    if (mode !== 'on' && mode !== 'off') {
      factor = /^\d+(\.\d+)?$/.test(mode) ? Number(mode) : NaN;
      if (!(factor > 0 && factor <= 1_000_000)) this.fail('rate-limit', `must be on, off or a factor above 0, got '${mode}'`);
    }
    const budgets = {} as Record<RateBudgetName, RateBudget | null>;
    for (const name of RATE_BUDGETS) {
      const d = DEFAULT_RATE_BUDGETS[name];
      const text = this.raw.get(`rate-limit-${name}`)?.values[0];
      const given = text === undefined ? undefined : parseRateBudget(text);
      if (given === undefined && text !== undefined) {
        this.fail(`rate-limit-${name}`, `must be N/PERIOD (e.g. 300/1m, 20/10s, 1000/1h; at most a day) or off, got '${text}'`);
      }
      budgets[name] = given !== undefined ? given : { points: Math.max(1, Math.round(d.points * factor)), seconds: d.seconds };
    }
    const trustedProxies = this.list('trusted-proxies') ?? [];
    try {
      trustedProxyList(trustedProxies);
    } catch (e) {
      this.fail('trusted-proxies', (e as Error).message);
    }
    const maxKeys = this.int('rate-limit-max-keys', 2, 10_000_000);
    // every setting is checked even when the limits are off
    return mode === 'off' ? null : { budgets, trustedProxies, maxKeys };
  }

  /** True when the option was given (flag or environment). */
  given(name: string): boolean {
    return this.raw.has(name);
  }

  /** `--ledger` and, for `substrate`, the chain options (a usage error where they do not fit together). */
  ledger(roles: readonly Role[]): Pick<Config, 'ledger' | 'chain'> {
    const kind = this.oneOf('ledger', ['embedded', 'substrate'] as const);
    if (kind === 'embedded') {
      for (const o of ['chain-url', 'chain-key', 'network', 'network-id'] as const) if (this.given(o)) this.fail(o, 'needs --ledger substrate');
      return { ledger: kind, chain: null };
    }
    // the chain decides what these set on an embedded ledger
    for (const o of ['block-time-ms', 'finality-depth', 'chain-id'] as const) {
      if (this.given(o)) this.fail(o, 'the chain decides this with --ledger substrate (block time and finality: the chain; chain id: the network file)');
    }
    if (!roles.includes('directory')) this.fail('ledger', 'substrate needs the directory role (the Relay and the Cache read a Directory)');
    for (const o of ['chain-url', 'chain-key'] as const) if (!this.given(o)) this.fail(o, 'required with --ledger substrate');
    if (this.given('network') && this.given('network-id')) this.fail('network-id', 'the network file names the network: give --network or --network-id');
    const networkId = this.string('network-id');
    if (!NETWORK_ID_PATTERN.test(networkId)) this.fail('network-id', `must be 1-64 characters of A-Z a-z 0-9 . _ -, got '${networkId}'`);
    const urls: string[] = [];
    for (const item of this.list('chain-url') ?? []) {
      let u: URL | undefined;
      try {
        u = new URL(item);
      } catch {
        u = undefined;
      }
      if (u === undefined || (u.protocol !== 'ws:' && u.protocol !== 'wss:')) this.fail('chain-url', `must be a ws:// or wss:// URL, got '${item}'`);
      if (!urls.includes(item)) urls.push(item);
    }
    const networkFile = this.given('network') ? this.string('network', '') : null;
    return { ledger: kind, chain: { urls, keyFile: this.string('chain-key', ''), networkFile, networkId } };
  }

  /** `--ledger-hand-over`, `--ledger-peer-url`, `--ledger-hand-over-max`. */
  handOver(): Config['ledgerHandOver'] {
    return {
      on: this.oneOf('ledger-hand-over', ['on', 'off']) === 'on',
      peerUrl: this.peerUrl('ledger-peer-url'),
      maxInFlight: this.int('ledger-hand-over-max', 1, 4096),
    };
  }

  /** One http(s) origin (`http://host:port`, no path), or null when not given. */
  peerUrl(name: string): string | null {
    const urls = this.urls(name);
    if (urls.length === 0) return null;
    const u = new URL(urls[0]!);
    if (urls.length > 1 || u.pathname !== '/') this.fail(name, `must be one origin (http://host:port), got '${this.list(name)?.join(',') ?? ''}'`);
    return u.origin;
  }

  urls(name: string): string[] {
    const out: string[] = [];
    for (const item of this.list(name) ?? []) {
      let u: URL;
      try {
        u = new URL(item);
      } catch {
        return this.fail(name, `not a URL: '${item}'`);
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') this.fail(name, `must be an http(s) URL, got '${item}'`);
      if (u.search !== '' || u.hash !== '' || u.username !== '' || u.password !== '') {
        this.fail(name, `must not carry credentials, a query or a fragment: '${item}'`);
      }
      const normal = `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
      if (!out.includes(normal)) out.push(normal);
    }
    return out;
  }
}

/** What is wrong with a `--metrics-token` value (16 to 256 visible ASCII characters, no spaces); undefined: nothing. */
export function metricsTokenProblem(token: string): string | undefined {
  return /^[\x21-\x7e]{16,256}$/.test(token) ? undefined : 'must be 16 to 256 visible ASCII characters without spaces';
}

/** True when `host` (as `--host` gives it) is a loopback address or `localhost`. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** `host` as it appears in a URL: IPv6 addresses in brackets. */
export function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** The Relay's settings (`--relay-*`), read in the order of {@link loadConfig}. */
function readRelay(r: Reader, profile: Config['profile']): Config['relay'] {
  return {
    maxHttpEnvelopeBytes: r.int('relay-max-envelope-bytes', 1, MAX_BODY_LIMIT),
    maxUnchunkedMessageBytes: r.int('relay-max-unchunked-bytes', 1, MAX_BODY_LIMIT),
    maxChunkBytes: r.int('relay-max-chunk-bytes', 1, MAX_BODY_LIMIT),
    stagingWindowSeconds: r.int('relay-staging-window-seconds', 1, YEAR_SECONDS),
    stagingMaxBytes: r.int('relay-staging-max-bytes', 1, Number.MAX_SAFE_INTEGER),
    stagingMaxSetsPerRecipient: r.int('relay-staging-max-sets-per-recipient', 1, 1_000_000),
    stagingMaxSetBytes: r.int('relay-staging-max-set-bytes', 1, Number.MAX_SAFE_INTEGER),
    stagingMaxBytesPerRecipient: r.int('relay-staging-max-bytes-per-recipient', 1, Number.MAX_SAFE_INTEGER),
    stagingMaxBytesPerSender: r.int('relay-staging-max-bytes-per-sender', 1, Number.MAX_SAFE_INTEGER),
    stagingIdleSeconds: r.int('relay-staging-idle-seconds', 1, YEAR_SECONDS),
    maxSessionsPerDid: r.int('relay-max-sessions-per-did', 1, 1024),
    liveAuth: r.oneOf('relay-live-auth', LIVE_AUTH_MODES, profile === 'platform' ? 'required' : 'open'),
    liveMaxSessions: r.int('relay-live-max-sessions', 1, 10_000_000),
    liveMaxSessionBufferedBytes: r.int('relay-live-max-session-buffered-bytes', 1, Number.MAX_SAFE_INTEGER),
    liveMaxBufferedBytes: r.int('relay-live-max-buffered-bytes', 1, Number.MAX_SAFE_INTEGER),
    liveAuthTimeoutMs: r.int('relay-live-auth-timeout-ms', 1, 600_000),
    livePingIntervalMs: r.int('relay-live-ping-interval-ms', 100, 600_000),
  };
}

/**
 * The rate limits of `argv` (rate-limit flags: `--rate-limit`, `--rate-limit-<budget>`, `--rate-limit-max-keys`,
 * `--trusted-proxies`) over their `DDN_*` variables, read as `ddn serve` reads them (defaults included; null when
 * `off`), for other commands that serve (`ddn mirror`). Throws {@link ConfigError} naming the flag.
 */
export function rateLimitSettings(argv: readonly string[], env: NodeJS.ProcessEnv): RateLimitSettings | null {
  return new Reader(collect(argv, env)).rateLimit();
}

/**
 * Parses flags (`--name value` or `--name=value`; list flags may repeat and add up, other flags repeated: the
 * last wins) over the matching `DDN_*` variables
 * of `env` (empty variables count as unset) into a frozen {@link Config}. Throws {@link ConfigError} naming the
 * flag on any unknown option or invalid value.
 */
export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv): Config {
  const r = new Reader(collect(argv, env));
  const roles = r.roles();
  const ports: Record<Role, number> = {
    directory: r.int('directory-port', 0, 65535),
    relay: r.int('relay-port', 0, 65535),
    cache: r.int('cache-port', 0, 65535),
  };
  for (const [i, a] of roles.entries()) {
    for (const b of roles.slice(i + 1)) {
      if (ports[a] !== 0 && ports[a] === ports[b]) {
        throw new ConfigError(`--${b}-port: port ${ports[b]} is already used by --${a}-port`, `--${b}-port`);
      }
    }
  }
  const chainId = r.string('chain-id');
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(chainId)) {
    throw new ConfigError(`--chain-id: must be 1-64 characters of A-Z a-z 0-9 . _ -, got '${chainId}'`, '--chain-id');
  }
  const profile = r.oneOf('profile', PROFILES);
  const config: Config = {
    dataDir: r.string('data-dir'),
    host: r.host(),
    roles,
    ports,
    profile,
    chainId,
    blockIntervalMs: r.int('block-time-ms', 1, MAX_TIMER_MS),
    finalityDepth: r.int('finality-depth', 0, 0xffff_ffff),
    ...r.ledger(roles),
    ledgerCacheBytes: r.int('ledger-cache-bytes', MIN_LEDGER_CACHE_BYTES, 2 ** 40),
    ledgerAdmissionWaitMs: r.int('ledger-admission-wait-ms', 0, 1000),
    ledgerHandOver: r.handOver(),
    logLevel: r.oneOf('log-level', LOG_LEVELS),
    logFormat: r.oneOf('log-format', LOG_FORMATS),
    accessLog: r.bool('access-log'),
    metricsToken: r.metricsToken(),
    publicUrls: { relay: r.urls('public-relay-url'), cache: r.urls('public-cache-url') },
    proofClockSkewSeconds: r.int('proof-clock-skew-seconds', 1, 86_400),
    policy: { allowPrivateEndpoints: r.bool('allow-private-endpoints') },
    events: { relayUrls: r.urls('event-relay-url'), budgetPerOwnerPerMinute: r.int('event-budget-per-owner', 1, 1_000_000) },
    directoryUrl: r.urls('directory-url'),
    directoryViewTtlMs: r.int('directory-view-ttl-ms', 0, 300_000),
    http: {
      headersTimeoutMs: r.int('http-headers-timeout-ms', 100, 600_000),
      requestTimeoutMs: r.int('http-request-timeout-ms', 0, 3_600_000),
      keepAliveTimeoutMs: r.int('http-keep-alive-timeout-ms', 100, 600_000),
      maxConnections: r.int('max-connections', 0, 1_000_000),
      maxConnectionsPerAddress: r.int('max-connections-per-address', 0, 1_000_000),
    },
    bodyBudget: {
      maxBytes: r.int('http-body-budget-bytes', 0, Number.MAX_SAFE_INTEGER),
      maxBytesPerAddress: r.int('http-body-budget-per-address-bytes', 0, Number.MAX_SAFE_INTEGER),
    },
    db: r.database(),
    directory: {
      maxBodyBytes: r.int('directory-max-body-bytes', 1, MAX_BODY_LIMIT),
      dnsServers: r.dnsServers('dns-server'),
      resolveCacheBytes: r.int('directory-resolve-cache-bytes', 0, 2 ** 40),
      exportStream: {
        maxSessions: r.int('export-stream-max-sessions', 1, 1_000_000),
        maxSessionsPerAddress: r.int('export-stream-max-sessions-per-address', 1, 1_000_000),
        pingIntervalMs: r.int('export-stream-ping-interval-ms', 100, 600_000),
      },
    },
    relay: readRelay(r, profile),
    cache: {
      maxRetentionSeconds: r.int('cache-max-retention-seconds', 1, YEAR_SECONDS),
      chunkStagingWindowSeconds: r.int('cache-chunk-staging-window-seconds', 1, YEAR_SECONDS),
      // The spec's payload is encrypted; the deployed openpayload clients package plaintext records (§10.1 decision).
      allowPlaintext: r.bool('cache-allow-plaintext', profile === 'openpayload'),
      maxBytesPerRecipient: r.int('cache-max-bytes-per-recipient', 0, Number.MAX_SAFE_INTEGER),
      readCacheBytes: r.int('cache-read-cache-bytes', 0, 1 << 30),
      storageBudgetBytes: r.int('cache-storage-budget-bytes', 0, Number.MAX_SAFE_INTEGER),
    },
    rateLimit: r.rateLimit(),
    storageReserveBytes: r.int('storage-reserve-bytes', 0, 2 ** 40),
  };
  return deepFreeze(config);
}
