/**
 * The metrics of one node (`GET /metrics`, Prometheus text through prom-client): one {@link Registry} per node
 * (tests run several nodes in one process), Node's default process metrics, and our own `ddn_` families. Parts
 * of the node report into it through small hooks (an {@link HttpObserver} per role server, sweep results, an
 * outbound observer); values that are cheap to read (ledger head, pool, live sessions, Directory-view reuse)
 * are read at scrape time. Features built elsewhere add their families with {@link NodeMetrics.counter} etc.
 */
import { Type, type TSchema } from 'typebox';
import { createHash, timingSafeEqual } from 'node:crypto';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { DdnError } from '../base/errors.js';
import type { RateLimits } from '../http/rate-limit.js';
import type { HttpObserver, HttpServer, RequestRecorder } from '../http/server.js';
import { asIs, defineRoute } from '../http/route.js';
import type { ChainOrderingStatus } from '../chain/substrate-ordering.js';
import type { Ledger } from '../ledger/chain.js';
import type { LookupGate } from '../outbound/lookup-gate.js';
import type { CheckpointerStats } from '../store/sqlite/wal-checkpointer.js';
import type { Role } from './config.js';
import type { BuildInfo } from './version.js';

/** Latency buckets in seconds, 0.5 ms to 10 s. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;

/** Counts of something a component keeps itself, read at scrape time. */
export type Totals = () => Readonly<Record<string, number>>;

type Labels = Readonly<Record<string, string>>;

/**
 * One labelled series of a counter kept as a plain number: label values are fixed when the cell is made, so
 * counting costs an addition (prom-client's own children hash their labels on every call).
 */
class CounterCell {
  value = 0;
  constructor(readonly labels: Labels) {}
}

/** One labelled series of a histogram kept as plain numbers (per-bucket counts, sum, count). */
class HistogramCell {
  readonly counts = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
  sum = 0;
  count = 0;
  constructor(readonly labels: Labels) {}

  observe(v: number): void {
    let i = 0;
    while (i < LATENCY_BUCKETS.length && v > LATENCY_BUCKETS[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
}

/** A metric family in prom-client's exposition form, read from cells at scrape time (series never counted are left out, as prom-client does). */
interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  get(): Promise<{ name: string; help: string; type: string; aggregator: 'sum'; values: { labels: Labels; value: number; metricName?: string }[] }>;
}

/** The cells of one family, each made once and kept. */
abstract class Cells<C> {
  protected readonly cells: C[] = [];
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly make: (labels: Labels) => C,
  ) {}

  cell(labels: Labels): C {
    const c = this.make(labels);
    this.cells.push(c);
    return c;
  }

  /** Cells by the value of one more label, made on first use (the value is a string already: no building). */
  byValue(fixed: Labels, label: string): (value: string) => C {
    const cells = new Map<string, C>();
    return (value) => {
      let c = cells.get(value);
      if (c === undefined) cells.set(value, (c = this.cell({ ...fixed, [label]: value })));
      return c;
    };
  }
}

class CounterFamily extends Cells<CounterCell> implements Family {
  readonly type = 'counter';
  constructor(name: string, help: string) {
    super(name, help, (labels) => new CounterCell(labels));
  }

  async get() {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: 'sum' as const,
      values: this.cells.filter((c) => c.value > 0).map((c) => ({ labels: c.labels, value: c.value })),
    };
  }
}

class HistogramFamily extends Cells<HistogramCell> implements Family {
  readonly type = 'histogram';
  constructor(name: string, help: string) {
    super(name, help, (labels) => new HistogramCell(labels));
  }

  async get() {
    const values: { labels: Labels; value: number; metricName: string }[] = [];
    for (const c of this.cells) {
      if (c.count === 0) continue;
      let cumulative = 0;
      for (let i = 0; i <= LATENCY_BUCKETS.length; i++) {
        cumulative += c.counts[i]!;
        const le = i < LATENCY_BUCKETS.length ? String(LATENCY_BUCKETS[i]) : '+Inf';
        values.push({ labels: { ...c.labels, le }, value: cumulative, metricName: `${this.name}_bucket` });
      }
      values.push({ labels: c.labels, value: c.sum, metricName: `${this.name}_sum` });
      values.push({ labels: c.labels, value: c.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: 'sum' as const, values };
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

/** Metrics of one node. */
export class NodeMetrics {
  readonly registry = new Registry();
  private readonly httpRequests: CounterFamily;
  private readonly httpDuration: HistogramFamily;
  private readonly httpErrors: CounterFamily;
  private readonly submissions: (outcome: string) => CounterCell;
  private readonly cacheOps: CounterFamily;
  private readonly relayDeliveries: CounterFamily;
  private readonly deliveryCells = new Map<string, (code: string) => CounterCell>();
  private readonly outboundCell: (result: string) => HistogramCell;

  constructor(build: BuildInfo) {
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'ddn_build_info',
      help: 'Always 1; the version and git commit of this build as labels',
      labelNames: ['version', 'commit'],
      registers: [this.registry],
    }).set({ version: build.version, commit: build.commit ?? '' }, 1);
    this.httpRequests = this.family(new CounterFamily('ddn_http_requests_total', 'HTTP requests answered, by role, route pattern, method and status class'));
    this.httpDuration = this.family(
      new HistogramFamily('ddn_http_request_duration_seconds', "Time from a request's arrival to its answer, by role and route pattern"),
    );
    this.httpErrors = this.family(new CounterFamily('ddn_http_errors_total', 'Error answers by role, route pattern and error code'));
    this.submissions = this.family(
      new CounterFamily('ddn_directory_submissions_total', 'Changes submitted to the Directory: ok (accepted into the pool) or the refusal code'),
    ).byValue({}, 'outcome');
    this.cacheOps = this.family(
      new CounterFamily('ddn_cache_operations_total', 'Cache stores, retrievals and acknowledgements by outcome (ok or the error code)'),
    );
    this.relayDeliveries = this.family(new CounterFamily('ddn_relay_deliveries_total', 'Relay answers to POST /relay by delivery mode and code'));
    const outbound = this.family(
      new HistogramFamily(
        'ddn_relay_outbound_duration_seconds',
        'Outbound requests of the Relay (Cache stores, forwards): duration by result (HTTP status class or transport failure)',
      ),
    );
    this.outboundCell = outbound.byValue({}, 'result');
  }

  /** Registers a family kept in plain numbers (prom-client reads any object of its exposition shape). */
  private family<F extends Family>(f: F): F {
    this.registry.registerMetric(f as unknown as Counter);
    return f;
  }

  /** A counter in this node's registry (for features that add their own families). */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  /** A gauge in this node's registry, read by `collect` at scrape time when given. */
  gauge(name: string, help: string, collect?: (g: Gauge) => void | Promise<void>, labelNames: readonly string[] = []): Gauge {
    return new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      ...(collect === undefined
        ? {}
        : {
            collect() {
              return collect(this);
            },
          }),
    });
  }

  /**
   * Gauges read at scrape time from one asynchronous `read` (a few store queries), made once per scrape for all of
   * them: prom-client asks every family in the same turn. While `read` fails the gauges have no sample (never a
   * stale one); the scrape itself still answers.
   */
  gaugesOf<T>(read: () => Promise<T>, families: Readonly<Record<string, { help: string; value: (t: T) => number }>>): void {
    let inFlight: Promise<T | undefined> | undefined;
    const once = () =>
      (inFlight ??= read()
        .catch(() => undefined)
        .finally(() => {
          inFlight = undefined;
        }));
    for (const [name, f] of Object.entries(families)) {
      this.gauge(name, f.help, async (g) => {
        const t = await once();
        if (t === undefined) g.reset();
        else g.set(f.value(t));
      });
    }
  }

  /** The commit-latency observer of one SQLite store's writer (`store`: `mailbox`, `relay`). */
  writerCommits(store: string): (seconds: number) => void {
    const cell = this.writerFamilies().commits(store);
    return (seconds) => cell.observe(seconds);
  }

  /** The queue depth of one SQLite store's writer, read at scrape time. */
  writerQueue(store: string, queued: () => number): void {
    this.writerFamilies().queues.set(store, queued);
  }

  private writers: { commits: (store: string) => HistogramCell; queues: Map<string, () => number> } | undefined;

  private checkpointReaders: Map<string, () => Readonly<CheckpointerStats> | null> | undefined;

  /**
   * The WAL checkpoints of one SQLite store (`store`: `mailbox`, `ledger`), read at scrape time: the checkpointer
   * thread's passes and failed passes, the WAL's rewinds, and the writer's own checkpoints when the thread fell
   * behind. `read` answers null while the store has no checkpointer thread (a small ledger: SQLite's own checkpoints).
   */
  sqliteCheckpoints(store: string, read: () => Readonly<CheckpointerStats> | null): void {
    if (this.checkpointReaders === undefined) {
      const readers = (this.checkpointReaders = new Map<string, () => Readonly<CheckpointerStats> | null>());
      new Counter({
        name: 'ddn_sqlite_checkpoints_total',
        help: "WAL checkpoints of a SQLite store since start, by store and kind: the checkpointer thread's passes that copied frames (pass) or failed, its end on an error included (failed), the WAL rewound past its bound (rewind), the writer's own past 256 MiB of WAL (writer: the thread fell behind)",
        labelNames: ['store', 'kind'],
        registers: [this.registry],
        collect() {
          this.reset();
          for (const [name, f] of readers) {
            const t = f();
            if (t === null) continue;
            this.inc({ store: name, kind: 'pass' }, t.passes);
            this.inc({ store: name, kind: 'failed' }, t.failures);
            this.inc({ store: name, kind: 'rewind' }, t.rewinds);
            this.inc({ store: name, kind: 'writer' }, t.writerCheckpoints);
          }
        },
      });
    }
    this.checkpointReaders.set(store, read);
  }

  private writerFamilies(): NonNullable<NodeMetrics['writers']> {
    if (this.writers !== undefined) return this.writers;
    const queues = new Map<string, () => number>();
    this.gauge(
      'ddn_sqlite_writer_queued_operations',
      "Write operations waiting for a SQLite store's writer thread (queued or in its transaction), by store",
      (g) => {
        for (const [store, queued] of queues) g.set({ store }, queued());
      },
      ['store'],
    );
    const commits = this.family(
      new HistogramFamily(
        'ddn_sqlite_writer_commit_seconds',
        "Commit latency of a SQLite store's writer: from a batch's hand-off to the writer thread to its answers (transaction and fsync), by store",
      ),
    ).byValue({}, 'store');
    return (this.writers = { commits, queues });
  }

  /** The observer of one role's HTTP server: every series of a route is made once, when the route is added. */
  httpObserver(role: Role): HttpObserver {
    const recorder = (method: string, route: string): RequestRecorder => {
      const classes = STATUS_CLASSES.map((c) => this.httpRequests.cell({ role, route, method, status_class: c }));
      const duration = this.httpDuration.cell({ role, route });
      const errors = this.httpErrors.byValue({ role, route }, 'code');
      const op = role === 'cache' ? cacheOperation(method, route) : undefined;
      const outcome =
        role === 'directory' && isSubmission(method, route)
          ? this.submissions
          : op === undefined
            ? undefined
            : this.cacheOps.byValue({ operation: op }, 'outcome');
      const ok = outcome?.('ok');
      return {
        record(status, code, seconds) {
          classes[Math.min(4, Math.max(0, Math.floor(status / 100) - 1))]!.value++;
          duration.observe(seconds);
          if (code !== undefined) errors(code).value++;
          if (outcome !== undefined) (status < 400 ? ok! : outcome(code ?? `${Math.floor(status / 100)}xx`)).value++;
        },
      };
    };
    return { route: recorder, unmatched: recorder('*', 'unmatched') };
  }

  /** Head, finalized block and pool of the ledger this node's Directory serves; blocks as they come. */
  watchLedger(ledger: Pick<Ledger, 'headRef' | 'finalizedRefNow' | 'poolSize' | 'onBlock' | 'onProduced'>): () => void {
    this.gauge('ddn_ledger_head_block', 'Head block number', (g) => g.set(ledger.headRef().number));
    this.gauge('ddn_ledger_finalized_block', 'Finalized block number', (g) => g.set(ledger.finalizedRefNow().number));
    this.gauge('ddn_ledger_pool_transactions', 'Transactions waiting in the pool', (g) => g.set(ledger.poolSize));
    const blocks = this.counter('ddn_ledger_blocks_total', 'Blocks this process applied (produced or replicated) since start');
    const production = this.family(
      new HistogramFamily(
        'ddn_ledger_block_production_seconds',
        'Time to produce one block, from the start of its build to its commit (blocks this process produced)',
      ),
    ).cell({});
    const stopBlocks = ledger.onBlock(() => blocks.inc());
    const stopProduced = ledger.onProduced((seconds) => production.observe(seconds));
    return () => {
      stopBlocks();
      stopProduced();
    };
  }

  /** A shared ledger's (PostgreSQL) replica out of storage: 1 while its catch-ups fail for want of it. */
  watchReplicaStorage(sync: { readonly replicaOutOfStorage: boolean }): void {
    this.gauge('ddn_ledger_replica_storage_full', "Whether this process's ledger replica is out of storage (1: catch-ups fail, admissions answered 507)", (g) =>
      g.set(sync.replicaOutOfStorage ? 1 : 0),
    );
  }

  /**
   * A shared ledger's admission lock (PostgreSQL): per kind of work (`admission` batches, `block` production),
   * the transactions that took it, the seconds they waited for it, their seconds from asking to commit, and the
   * seconds they held it. The wait's share of the total is how far the lock holds this process back; the time
   * held, summed over every process and divided by the wall time, is how busy the lock is.
   */
  /** Writes handed to the producer, admitted here after a failed hand-over, and taken from other processes. */
  watchHandOver(handOver: { readonly counts: Readonly<{ handed: number; failed: number; busy: number; taken: number }> }): void {
    this.countedBy(
      'ddn_ledger_hand_overs_total',
      'Signed writes handed over between Directory processes, by outcome: handed (answered by the producer), failed (admitted here after the hop failed), busy (admitted here: --ledger-hand-over-max in flight), taken (from another process)',
      'outcome',
      () => ({ ...handOver.counts }),
    );
  }

  watchLedgerLock(sync: {
    readonly lockUses: Readonly<Record<string, { transactions: number; waitS: number; totalS: number; heldS: number }>>;
    readonly viewAdmissions: Readonly<Record<string, number>>;
    readonly admissionWaits: Readonly<{ batches: number; lonely: number }>;
  }): void {
    this.countedBy(
      'ddn_ledger_admission_waits_total',
      'Admission batches that waited for company (--ledger-admission-wait-ms), by whether any came: company, alone',
      'found',
      () => ({ company: sync.admissionWaits.batches - sync.admissionWaits.lonely, alone: sync.admissionWaits.lonely }),
    );
    this.countedBy(
      'ddn_ledger_view_batches_total',
      "Admission batches checked on this process's own view of the shared pool, by outcome: stored, or taken again under the admission lock (stale, conflict, full)",
      'outcome',
      () => sync.viewAdmissions,
    );
    const by = (key: 'transactions' | 'waitS' | 'totalS' | 'heldS') => () =>
      Object.fromEntries(Object.entries(sync.lockUses).map(([work, u]) => [work, u[key]]));
    this.countedBy('ddn_ledger_lock_transactions_total', 'Transactions that took the shared ledger admission lock, by work', 'work', by('transactions'));
    this.countedBy(
      'ddn_ledger_lock_wait_seconds_total',
      'Seconds from asking for the shared ledger admission lock to holding it (measured by PostgreSQL), by work',
      'work',
      by('waitS'),
    );
    this.countedBy(
      'ddn_ledger_lock_transaction_seconds_total',
      'Seconds from asking for the shared ledger admission lock to the end of its transaction (wait included), by work',
      'work',
      by('totalS'),
    );
    this.countedBy(
      'ddn_ledger_lock_held_seconds_total',
      'Seconds the shared ledger admission lock was held, from taking it to the end of its transaction (measured by PostgreSQL), by work',
      'work',
      by('heldS'),
    );
  }

  /**
   * `sweep` counted into `name` by kind: each number of its result (e.g. `expiredEntries`) is added to the
   * counter labelled with that kind in snake case (`expired_entries`).
   */
  countedSweep<T extends object>(name: string, help: string, sweep: () => Promise<T>): () => Promise<T> {
    const removed = this.family(new CounterFamily(name, help)).byValue({}, 'kind');
    return async () => {
      const result = await sweep();
      for (const [kind, n] of Object.entries(result)) {
        if (typeof n === 'number' && n > 0) removed(kind.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)).value += n;
      }
      return result;
    };
  }

  /** The Relay's delivery answers (by `delivery_mode` and `code`). */
  relayDelivery(mode: string, code: string): void {
    let byCode = this.deliveryCells.get(mode);
    if (byCode === undefined) this.deliveryCells.set(mode, (byCode = this.relayDeliveries.byValue({ mode }, 'code')));
    byCode(code).value++;
  }

  /** One outbound request of the Relay: its result (`2xx`…, or the transport failure) and duration. */
  outbound(result: string, seconds: number): void {
    this.outboundCell(result).observe(seconds);
  }

  /**
   * A Directory on `--ledger substrate` (docs/chain.md): the chain's finalized head, the block applied and the
   * lag, the batches submitted and included, fees paid, refusals by kind and the account's balance (in the token's
   * smallest unit; large balances lose precision beyond 2^53 in the exposition's float).
   */
  watchChain(chain: { status(): ChainOrderingStatus }): void {
    const s = () => chain.status();
    this.gauges(
      {
        ddn_chain_finalized_block: { help: "The chain's newest finalized block seen", key: 'finalized' },
        ddn_chain_applied_block: { help: 'The last chain block applied to the ledger', key: 'applied' },
        ddn_chain_lag_blocks: { help: 'Finalized chain blocks not yet applied', key: 'lag' },
        ddn_chain_connected: { help: '1 while a chain endpoint is connected', key: 'connected' },
        ddn_chain_awaiting_transactions: { help: 'Changes accepted here that the chain has not ordered yet', key: 'awaiting' },
        ddn_chain_account_balance: { help: "The chain account's free balance (smallest unit)", key: 'balance' },
      },
      () => {
        const x = s();
        return {
          finalized: x.chainFinalized,
          applied: x.applied.number,
          lag: Math.max(0, x.chainFinalized - x.applied.number),
          connected: x.connected ? 1 : 0,
          awaiting: x.awaiting,
          balance: x.balance === null ? 0 : Number(x.balance),
        };
      },
    );
    this.countedBy('ddn_chain_batches_total', 'Batches (remarks) this Directory submitted, by outcome', 'outcome', () => {
      const st = s().submitter;
      return { submitted: st.batchesSubmitted, included: st.batchesIncluded };
    });
    this.countedBy('ddn_chain_submission_failures_total', 'Batches the chain did not include, by reason', 'reason', () => ({ ...s().submitter.failures }));
    this.gauge('ddn_chain_fees_paid', 'Fees paid for batches since start (smallest unit)', (g) => g.set(Number(s().submitter.feesPaid)));
    this.gauge('ddn_chain_transactions_submitted', 'Changes submitted in batches since start (a change re-submitted counts again)', (g) =>
      g.set(s().submitter.transactionsSubmitted),
    );
  }

  /** The requests refused by rate limits, by budget (a node's or a mirror's). */
  watchRateLimits(limits: Pick<RateLimits, 'refusals'>): void {
    const { refusals } = limits;
    this.countedBy(
      'ddn_rate_limit_refusals_total',
      'Requests refused with 429 rate_limited, by rate-limit budget (a class, or <class>-target)',
      'class',
      () => ({
        ...refusals,
      }),
    );
  }

  /** A Directory's `GET /resolve` answers by where they came from (its resolve cache counts them; a node or a mirror). */
  watchResolveAnswers(cache: { readonly answers: number; readonly renders: number }): void {
    this.countedBy(
      'ddn_directory_resolve_answers_total',
      'GET /resolve answers since start: cached (the DID part kept across blocks) or rendered from the ledger',
      'source',
      () => ({ cached: cache.answers - cache.renders, rendered: cache.renders }),
    );
  }

  /** A PostgreSQL Relay's live fan-out: announcements from other processes dropped at their queue's bound, and its asks of them. */
  watchLiveFanout(fanout: { readonly droppedAnnouncements: number; readonly askCounts: Readonly<Record<string, number>> }): void {
    new Counter({
      name: 'ddn_relay_live_announcements_dropped_total',
      help: "Other Relay processes' live announcements this process dropped because its queue of them was full",
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(fanout.droppedAnnouncements);
      },
    });
    new Counter({
      name: 'ddn_relay_live_asks_total',
      help: 'Envelopes for a recipient with no Cache service and no session here, by what asking the other Relay processes found',
      labelNames: ['outcome'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [outcome, n] of Object.entries(fanout.askCounts)) this.inc({ outcome }, n);
      },
    });
  }

  /**
   * The process's outbound DNS lookups (`src/outbound/lookup-gate.ts`), read at each scrape: at the resolver and
   * waiting for their turn, and those refused one (`full`: 1,000 waited already; `waited`: no turn within 5 s).
   */
  watchOutboundLookups(gate: Pick<LookupGate, 'load' | 'refused'>): void {
    this.gauge(
      'ddn_outbound_dns_lookups',
      'Outbound DNS lookups at the system resolver (running) and waiting for their turn (waiting)',
      (g) => {
        const { running, waiting } = gate.load;
        g.set({ state: 'running' }, running);
        g.set({ state: 'waiting' }, waiting);
      },
      ['state'],
    );
    new Counter({
      name: 'ddn_outbound_dns_lookups_refused_total',
      help: 'Outbound DNS lookups refused a turn at the system resolver: too many waiting (full) or none in time (waited)',
      labelNames: ['reason'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [reason, n] of Object.entries(gate.refused)) this.inc({ reason }, n);
      },
    });
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
  server.add([
    defineRoute({
      method: 'GET',
      url: '/metrics',
      summary: 'Prometheus text exposition; a bearer token (--metrics-token) unless on loopback',
      tags: ['meta'],
      answers: { 200: { description: 'Prometheus text', content: { 'text/plain': { schema: Type.String() } } } as unknown as TSchema },
      errors: ['unauthorized', 'forbidden'],
      parse: asIs,
      handle: async (_input, ctx) => {
        if (expected !== null) {
          const given = ctx.header('authorization');
          if (given === undefined || !timingSafeEqual(digest(given), expected))
            throw new DdnError('unauthorized', 'GET /metrics needs Authorization: Bearer <--metrics-token>');
        } else if (!access.loopback) {
          throw new DdnError('forbidden', 'set --metrics-token to serve /metrics on a non-loopback address');
        }
        return { status: 200 as const, body: {}, payload: await metrics.text(), contentType: metrics.registry.contentType };
      },
    }),
  ]);
}
