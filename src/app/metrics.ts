/**
 * The metrics of one node (`GET /metrics`, Prometheus text through prom-client): one {@link Registry} per node
 * (tests run several nodes in one process), Node's default process metrics, and our own `ddn_` families. Parts
 * of the node report into it through small hooks (an {@link HttpObserver} per role server, sweep results, an
 * outbound observer); values that are cheap to read (ledger head, pool, live sessions, Directory-view reuse)
 * are read at scrape time. Features built elsewhere add their families with {@link NodeMetrics.counter} etc.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DdnError } from '../base/errors.js';
import type { HttpObserver, HttpServer, RequestRecorder } from '../http/server.js';
import type { Ledger } from '../ledger/chain.js';
import type { Role } from './config.js';
import type { BuildInfo } from './version.js';

/** Latency buckets in seconds, 0.5 ms to 10 s. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;

/** Counts of something a component keeps itself, read at scrape time. */
export type Totals = () => Readonly<Record<string, number>>;

/** Child counters by label value, made on first use and reused (label hashing once per value). */
class ByValue {
  private readonly children = new Map<string, { inc(n?: number): void }>();

  constructor(
    private readonly counter: Counter,
    private readonly fixed: Readonly<Record<string, string>>,
    private readonly label: string,
  ) {}

  inc(value: string, n = 1): void {
    let child = this.children.get(value);
    if (child === undefined) {
      child = this.counter.labels({ ...this.fixed, [this.label]: value });
      this.children.set(value, child);
    }
    child.inc(n);
  }
}

/** The Directory's write routes: every change submitted to the ledger (not its `prepare` or DNS-challenge steps). */
function isSubmission(method: string, pattern: string): boolean {
  return method !== 'GET' && method !== 'HEAD' && !pattern.endsWith('/prepare') && !pattern.includes('/dns-challenges');
}

/** The Cache's routes by what they do. */
function cacheOperation(method: string, pattern: string): 'store' | 'retrieval' | 'ack' | undefined {
  if (method === 'POST' && pattern === '/cache/store') return 'store';
  if (method === 'POST' && pattern === '/cache/ack') return 'ack';
  if (method === 'GET' && /^\/cache\/(messages|message|chunks|summary)\//.test(pattern)) return 'retrieval';
  return undefined;
}

/** The outcome label of an answer: `ok` for a success, else its error code (or its status class). */
function outcomeOf(status: number, code: string | undefined): string {
  return status < 400 ? 'ok' : (code ?? `${Math.floor(status / 100)}xx`);
}

/** Metrics of one node. */
export class NodeMetrics {
  readonly registry = new Registry();
  private readonly httpRequests: Counter;
  private readonly httpDuration: Histogram;
  private readonly httpErrors: Counter;
  private readonly submissions: Counter;
  private readonly cacheOps: Counter;
  private readonly relayDeliveries: Counter;
  private readonly outboundDuration: Histogram;

  constructor(build: BuildInfo) {
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'ddn_build_info',
      help: 'Always 1; the version and git commit of this build as labels',
      labelNames: ['version', 'commit'],
      registers: [this.registry],
    }).set({ version: build.version, commit: build.commit ?? '' }, 1);
    this.httpRequests = this.counter('ddn_http_requests_total', 'HTTP requests answered, by role, route pattern, method and status class', [
      'role',
      'route',
      'method',
      'status_class',
    ]);
    this.httpDuration = new Histogram({
      name: 'ddn_http_request_duration_seconds',
      help: 'Time from a request\'s arrival to its answer, by role and route pattern',
      labelNames: ['role', 'route'],
      buckets: LATENCY_BUCKETS,
      registers: [this.registry],
    });
    this.httpErrors = this.counter('ddn_http_errors_total', 'Error answers by role, route pattern and error code', ['role', 'route', 'code']);
    this.submissions = this.counter('ddn_directory_submissions_total', 'Changes submitted to the Directory: ok (accepted into the pool) or the refusal code', ['outcome']);
    this.cacheOps = this.counter('ddn_cache_operations_total', 'Cache stores, retrievals and acknowledgements by outcome (ok or the error code)', ['operation', 'outcome']);
    this.relayDeliveries = this.counter('ddn_relay_deliveries_total', 'Relay answers to POST /relay by delivery mode and code', ['mode', 'code']);
    this.outboundDuration = new Histogram({
      name: 'ddn_relay_outbound_duration_seconds',
      help: 'Outbound requests of the Relay (Cache stores, forwards): duration by result (HTTP status class or transport failure)',
      labelNames: ['result'],
      buckets: LATENCY_BUCKETS,
      registers: [this.registry],
    });
  }

  /** A counter in this node's registry (for features that add their own families). */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  /** A gauge in this node's registry, read by `collect` at scrape time when given. */
  gauge(name: string, help: string, collect?: (g: Gauge) => void, labelNames: readonly string[] = []): Gauge {
    return new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      ...(collect === undefined ? {} : { collect() { collect(this); } }),
    });
  }

  /** The observer of one role's HTTP server: label children resolved once per route. */
  httpObserver(role: Role): HttpObserver {
    const recorder = (method: string, route: string): RequestRecorder => {
      const classes = STATUS_CLASSES.map((c) => this.httpRequests.labels({ role, route, method, status_class: c }));
      const duration = this.httpDuration.labels({ role, route });
      const errors = new ByValue(this.httpErrors, { role, route }, 'code');
      const submission = role === 'directory' && isSubmission(method, route) ? new ByValue(this.submissions, {}, 'outcome') : undefined;
      const op = role === 'cache' ? cacheOperation(method, route) : undefined;
      const cacheOp = op === undefined ? undefined : new ByValue(this.cacheOps, { operation: op }, 'outcome');
      return {
        record(status, code, seconds) {
          classes[Math.min(4, Math.max(0, Math.floor(status / 100) - 1))]!.inc();
          duration.observe(seconds);
          if (code !== undefined) errors.inc(code);
          submission?.inc(outcomeOf(status, code));
          cacheOp?.inc(outcomeOf(status, code));
        },
      };
    };
    return { route: recorder, unmatched: recorder('*', 'unmatched') };
  }

  /** Head, finalized block and pool of the ledger this node's Directory serves; blocks as they come. */
  watchLedger(ledger: Pick<Ledger, 'headRef' | 'finalizedRefNow' | 'poolSize' | 'onBlock'>): () => void {
    this.gauge('ddn_ledger_head_block', 'Head block number', (g) => g.set(ledger.headRef().number));
    this.gauge('ddn_ledger_finalized_block', 'Finalized block number', (g) => g.set(ledger.finalizedRefNow().number));
    this.gauge('ddn_ledger_pool_transactions', 'Transactions waiting in the pool', (g) => g.set(ledger.poolSize));
    const blocks = this.counter('ddn_ledger_blocks_total', 'Blocks this process applied (produced or replicated) since start');
    return ledger.onBlock(() => blocks.inc());
  }

  /**
   * `sweep` counted into `name` by kind: each number of its result (e.g. `expiredEntries`) is added to the
   * counter labelled with that kind in snake case (`expired_entries`).
   */
  countedSweep<T extends object>(name: string, help: string, sweep: () => Promise<T>): () => Promise<T> {
    const removed = new ByValue(this.counter(name, help, ['kind']), {}, 'kind');
    return async () => {
      const result = await sweep();
      for (const [kind, n] of Object.entries(result)) {
        if (typeof n === 'number' && n > 0) removed.inc(kind.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), n);
      }
      return result;
    };
  }

  /** The Relay's delivery answers (by `delivery_mode` and `code`). */
  relayDelivery(mode: string, code: string): void {
    this.relayDeliveries.labels({ mode, code }).inc();
  }

  /** One outbound request of the Relay: its result (`2xx`…, or the transport failure) and duration. */
  outbound(result: string, seconds: number): void {
    this.outboundDuration.labels({ result }).observe(seconds);
  }

  /** Gauges read at scrape time, one per family: `families` maps each name to its help and its key in `read()`. */
  gauges(families: Readonly<Record<string, { help: string; key: string }>>, read: Totals): void {
    for (const [name, f] of Object.entries(families)) this.gauge(name, f.help, (g) => g.set(read()[f.key] ?? 0));
  }

  /** A counter, by one label, whose values a component counts itself and `read` returns at scrape time. */
  countedBy(name: string, help: string, label: string, read: Totals): void {
    new Counter({
      name,
      help,
      labelNames: [label],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [value, n] of Object.entries(read())) this.inc({ [label]: value }, n);
      },
    });
  }

  /** The exposition text. */
  async text(): Promise<string> {
    return this.registry.metrics();
  }
}

/** Who may read `/metrics`. */
export interface MetricsAccess {
  /** The bearer token `--metrics-token` asks for; null: none. */
  token: string | null;
  /** Without a token, whether the node listens on loopback only (then `/metrics` is open). */
  loopback: boolean;
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** Adds `GET /metrics` to `server`: open on loopback without a token, else only with `Authorization: Bearer`. */
export function registerMetricsRoute(server: HttpServer, metrics: NodeMetrics, access: MetricsAccess): void {
  const expected = access.token === null ? null : digest(`Bearer ${access.token}`);
  server.route('GET', '/metrics', async (ctx) => {
    if (expected !== null) {
      const given = ctx.header('authorization');
      if (given === undefined || !timingSafeEqual(digest(given), expected)) throw new DdnError('unauthorized', 'GET /metrics needs Authorization: Bearer <--metrics-token>');
    } else if (!access.loopback) {
      throw new DdnError('forbidden', 'set --metrics-token to serve /metrics on a non-loopback address');
    }
    return { status: 200, body: {}, payload: await metrics.text(), contentType: metrics.registry.contentType };
  });
}
