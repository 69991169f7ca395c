/**
 * What the orchestrator asks the load generator to do (sent over IPC, so plain data) and what it answers.
 * Requests that must differ per request (envelope ids, signed retrieval proofs) are described here and built
 * inside the load generator with the project's own protocol code.
 */
import type { CpuUse } from './proc.js';

/** One fixed request, repeated. */
export interface StaticRequest {
  kind: 'static';
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/** `POST path` with a fresh envelope (new `message_id`) of exactly `bodyBytes` bytes to `to`, per request. */
export interface EnvelopeRequest {
  kind: 'envelope';
  path: string;
  to: string;
  bodyBytes: number;
  /** More processes beside the job's `url` (one autocannon each, the connections split between them). */
  moreUrls?: string[];
}

/** `GET path` with a fresh signed retrieval proof (http-api.md §11.4) per request, signed before the clock starts. */
export interface ProofRequest {
  kind: 'proof';
  path: string;
  operation: 'pull' | 'summary';
  profile: string;
  did: string;
  /** Hex of the 32-byte Ed25519 seed of `keyId`. */
  seedHex: string;
  keyId: string;
  serviceId: string;
  endpoint: string;
}

/** One DID of a {@link DidUpdateRequest}. */
export interface UpdatedDid {
  did: string;
  /** Hex of the 32-byte Ed25519 seed of its root key. */
  seedHex: string;
  /** The service every update rewrites (`UpdateService`, a new endpoint each time). */
  serviceId: string;
  serviceType: string;
  /** Its next document nonce (decimal). */
  nonce: string;
}

/**
 * Pre-signed DID updates (http-api.md §5.1 `UpdateService`, signed by the root key, built with the SDK's codecs
 * before the clock starts): round after round, each DID once per round with its next document nonce, so an
 * update is sent only after the one before it on that DID was answered, as long as there are more DIDs than
 * connections. DID `i` goes to `urls[i % urls.length]` (the job's `url` first), each URL with its share of the
 * connections.
 */
export interface DidUpdateRequest {
  kind: 'did-update';
  profile: string;
  dids: UpdatedDid[];
  rounds: number;
  /** More Directory processes of the same ledger, beside the job's `url`. */
  moreUrls?: string[];
}

/**
 * `GET pathPrefix + encodeURIComponent(did)` of a DID drawn uniformly at random per request from the first `count`
 * lines of `didsFile` (`DID` or `DID<TAB>…` a line, as bench/bigledger.ts writes it).
 */
export interface RandomDidRequest {
  kind: 'random-did';
  pathPrefix: string;
  didsFile: string;
  count: number;
}

/**
 * `POST /register-did` of fresh DIDs (new keys, client-built signed bodies, no prepare), signed before the clock
 * starts: `count` of them, sent once each in order (the last again when used up: answered 409/422, not counted).
 */
export interface RegistrationRequest {
  kind: 'registration';
  profile: string;
  count: number;
}

export type RequestSpec = StaticRequest | EnvelopeRequest | ProofRequest | DidUpdateRequest | RandomDidRequest | RegistrationRequest;

export interface LoadJob {
  name: string;
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  url: string;
  connections: number;
  /** Measured seconds (proof jobs: the target; they stop when their pre-signed proofs are used up). */
  durationS: number;
  /** Unmeasured seconds run first with the same requests. */
  warmupS: number;
  request: RequestSpec;
  /** Per-request timeout, seconds. */
  timeoutS?: number;
}

export interface LatencyMs {
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface LoadResult {
  name: string;
  connections: number;
  /** Requests answered 2xx per second of the measured window. */
  rate: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statuses: Record<string, number>;
  duration_s: number;
  /** Latency of 2xx answers, from the load generator's clock. */
  latency_ms: LatencyMs;
  /** Request bytes sent per second of the measured window (body included). */
  sent_bytes_per_s: number;
  /** CPU of the load-generator process during the measured window. */
  loadgen_cpu: CpuUse;
  /** Proofs signed before the measured window (proof jobs). */
  presigned?: number;
  /** CPU of the process under test during the measured window (filled in by the orchestrator). */
  target_cpu?: CpuUse;
  /**
   * CPU used on the machine during the measured window by everything except the process under test and the
   * load generator, in cores — other work sharing the machine, which skews the figure.
   */
  other_cpu_cores?: number;
  /** CPU used on the whole machine during the measured window (every core, everything on it), in cores. */
  machine_cores?: number;
  /** Runs made (more than one when other work disturbed the first); this is the quietest. */
  attempts?: number;
  /**
   * What the caller's probe (`BenchContext.load`'s third argument, a running total such as PostgreSQL's CPU
   * milliseconds) grew by over this run, warm-up included — this run's alone, not the repeated runs' too.
   */
  probe_delta?: number;
}

export type LoadgenMessage = { type: 'run'; job: LoadJob } | { type: 'exit' };
export type LoadgenReply = { type: 'measuring' } | { type: 'result'; result: LoadResult } | { type: 'error'; message: string };
