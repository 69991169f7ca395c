/**
 * The live-push fan-out across Relay processes sharing one PostgreSQL database (`--db`; port:
 * src/relay/live-fanout.ts). The origin pushes to its own sessions, then announces the envelope with NOTIFY on
 * one channel per schema; every process LISTENs on one dedicated connection (reconnecting after errors) and
 * pushes to its own sessions of the DID, skipping announcements that carry its own process id.
 *
 * A NOTIFY payload must stay under 8000 bytes: a larger envelope is written to `relay_live_bodies` (id, did,
 * body, created_at_ms) in the same statement as the NOTIFY, which then carries only the id and the DID; a
 * listener with a session of that DID fetches the body by id. Rows older than {@link LIVE_BODY_RETENTION_MS}
 * are swept. Notification-grade throughout: an announcement lost while a listener reconnects is not replayed
 * (the Cache copy remains), and nothing here is ever the only copy of an envelope.
 *
 * Announcements are handled one at a time in arrival order, so a process pushes envelopes in the order their
 * NOTIFYs committed, inline or not. At most {@link MAX_QUEUED_ANNOUNCEMENTS} wait (behind a large body's read, while
 * the database is slow); later ones are dropped and counted until the queue has room again.
 *
 * A process alone announces nothing: every listening session holds a shared advisory lock of the channel and,
 * once it holds it, says so on the channel (`{"o":…,"d":"","l":1}`, which a process of an older version ignores
 * as an announcement for no session). At connect and every {@link LOOK_INTERVAL_MS} a process looks whether
 * another session holds the lock; it announces while one does, or while it has heard another process since its
 * last look (a hello, or any announcement of another process: an older version's listener holds no lock). A
 * process starts listening before its Relay serves, so its sessions open after the others have heard its hello.
 * Until session 33 every send paid a NOTIFY transaction — a commit and its WAL flush — even with no other process;
 * now the inline announcements of one event-loop turn (and those made while the previous statement runs) share one
 * statement and its transaction, in their order, each with the origin's count `n` (PostgreSQL delivers identical
 * payloads of one transaction once).
 *
 * A recipient with no Cache service is delivered only live (executor.ts): when the process that takes its envelope
 * holds no session of it, it asks the processes that do (live-presence.ts says which, and whether they are alive):
 * the announcement carries an ask id (`q`) and those processes (`t`), each of which pushes to its sessions and
 * answers on the channel with what it reached (`{"k":…,"o":…,"s":…,"a":…}`, handled as it arrives, not queued).
 * The asking process waits for every answer, {@link ASK_WAIT_MS} at most, and sums them; at most
 * {@link MAX_OPEN_ASKS} asks wait at once (beyond, it asks nobody: no reach). A process that answers late has
 * pushed an envelope its sender was told was not delivered: the sender's retry is then a duplicate it receives.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import type { LiveFanout, LocalLiveSessions } from '../../relay/live-fanout.js';
import { NO_REACH, type LiveReach } from '../../relay/live-sessions.js';
import { KeyedBatches, settledAll } from './keyed-batches.js';
import { schemaChannel } from './notify-channel.js';
import { BEAT_MS, LIVE_PRESENCE_SQL, PgLivePresence } from './live-presence.js';
import { migratePg, type PgMigration, type PgPool } from './pool.js';

export const PG_LIVE_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE relay_live_bodies (
        id TEXT PRIMARY KEY,
        did TEXT NOT NULL,
        body BYTEA NOT NULL,
        created_at_ms BIGINT NOT NULL);
      CREATE INDEX relay_live_bodies_created ON relay_live_bodies (created_at_ms);
    `,
  },
  { version: 2, sql: LIVE_PRESENCE_SQL },
];

/** The migration namespace in `schema_migrations`. */
export const PG_LIVE_NAMESPACE = 'relay_live';
/** A NOTIFY payload must be shorter than 8000 bytes. */
export const MAX_NOTIFY_PAYLOAD_BYTES = 7999;
/** How long a large envelope's row is kept for listeners to fetch. */
export const LIVE_BODY_RETENTION_MS = 5 * 60_000;
const SWEEP_INTERVAL_MS = 60_000;
/** How often a process looks again whether another process listens (one gone stops being announced to). */
export const LOOK_INTERVAL_MS = 10_000;

/** The shared advisory lock every listening session of `channel` holds (one bigint key). */
function listenerLock(channel: string): string {
  return `hashtext(${pg.escapeLiteral(`ddn-relay-live-listener:${channel}`)})::int8`;
}

/** Whether a session other than this one holds the listener lock of `channel` (reads `pg_locks`: for a look, not per send). */
function othersListeningSql(channel: string): string {
  return `SELECT EXISTS (
    SELECT 1 FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_backend_pid() AND l.objsubid = 1
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND ((l.classid::int8 << 32) | l.objid::int8) = ${listenerLock(channel)}) AS others`;
}
/**
 * Announcements of other processes waiting to be handled at most (each holds its payload, up to 8000 bytes). They
 * wait only behind the read of a large envelope's row; while the database does not answer that read the LISTEN
 * connection keeps delivering, so without a bound the queue grew for as long as the stall lasted. One beyond it is
 * dropped: a push is a notification-grade duplicate, the Cache copy remains.
 */
export const MAX_QUEUED_ANNOUNCEMENTS = 10_000;
/** The longest an asking process waits for the answers of the processes it asked. */
export const ASK_WAIT_MS = 2_000;
/** Asks waiting for their answers at most. */
export const MAX_OPEN_ASKS = 1_024;
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;

/** An announcement: origin process, DID, and the envelope text inline (`e`) or the id of its row (`id`). */
interface Announcement {
  o: string;
  /** The origin's count of its announcements: PostgreSQL folds identical payloads of one transaction into one. */
  n?: number;
  d: string;
  e?: string;
  id?: string;
  /** A hello: the origin listens from now on (its `d` is empty). */
  l?: 1;
  /** An ask: the processes in `t` answer it with what they reached. */
  q?: string;
  t?: string[];
}

/** The answer to an ask: what process `o` reached of ask `k`. */
interface Answer {
  k: string;
  o: string;
  s: number;
  a: number;
}

/** Answers start with this (an announcement starts with its origin). */
const ANSWER_PREFIX = '{"k":';

/** How asking other processes ended (metrics `ddn_relay_live_asks_total`). */
export type AskCounts = {
  /** Nobody to ask: no other live process holds a session of the DID. */
  none: number;
  /** Asked, and some session was reached. */
  reached: number;
  /** Asked, every process answered, no session reached. */
  unreached: number;
  /** Asked, and a process did not answer within {@link ASK_WAIT_MS} (what the others reached counts). */
  late: number;
  /** Not asked: {@link MAX_OPEN_ASKS} asks waited, or the presence could not be read or the ask not sent. */
  failed: number;
};

/** An ask waiting for its answers. */
interface OpenAsk {
  waiting: Set<string>;
  reach: { sessions: number; authenticated: number };
  done: () => void;
}

export interface PgLiveFanoutOptions {
  /** Where the dedicated LISTEN connection goes (the `--db` URL). */
  url: string;
  schema: string;
  /** The pool (scoped to `schema`) used to announce, fetch and sweep; stays the caller's. */
  pool: PgPool;
  logger?: Logger;
  nowMs?: () => number;
  /** The process id announcements carry (default: random per instance). */
  processId?: string;
  /** Announcements waiting at most (default {@link MAX_QUEUED_ANNOUNCEMENTS}). */
  maxQueued?: number;
  /** The longest wait for the answers to an ask (default {@link ASK_WAIT_MS}). */
  askWaitMs?: number;
  /** Asks waiting at most (default {@link MAX_OPEN_ASKS}). */
  maxOpenAsks?: number;
}

export class PgLiveFanout implements LiveFanout {
  readonly processId: string;
  readonly channel: string;
  private sessions: LocalLiveSessions | undefined;
  private client: pg.Client | undefined;
  private closed = false;
  private reconnectMs = RECONNECT_MIN_MS;
  private listens = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly sweeper: NodeJS.Timeout;
  /** Announcements are handled in arrival order. */
  private inbound: Promise<void> = Promise.resolve();
  /** Announcements of other processes queued on {@link inbound} and not handled yet. */
  private queued = 0;
  /** Announcements dropped because {@link MAX_QUEUED_ANNOUNCEMENTS} waited (logged once each time the queue fills). */
  droppedAnnouncements = 0;
  /** {@link droppedAnnouncements} when the queue last emptied: the first drop after it is logged. */
  private droppedLogged = 0;
  private readonly outbound = new Set<Promise<void>>();
  private readonly nowMs: () => number;
  /**
   * Whether another process may hear this one's announcements: true until a look found no other listener, and
   * again on hearing another process.
   */
  private othersListening = true;
  /** Other processes heard so far: one heard during a look outdates the look's answer. */
  private othersHeard = 0;
  private readonly looker: NodeJS.Timeout;
  private readonly beater: NodeJS.Timeout;
  /** Which processes hold sessions of which DID. */
  readonly presence: PgLivePresence;
  /** Asks waiting for their answers, by id. */
  private readonly asks = new Map<string, OpenAsk>();
  private openAsks = 0;
  readonly askCounts: AskCounts = { none: 0, reached: 0, unreached: 0, late: 0, failed: 0 };
  /** This process's own announcements start with this (skipped without parsing them). */
  private readonly ownPrefix: string;
  /** Announcements so far (each payload's `n`). */
  private announced = 0;
  /** The inline announcements of one turn (and those made while the last statement runs): one NOTIFY statement. */
  private readonly inline = new KeyedBatches<string, void>(
    async (_, payloads) => {
      await this.o.pool.query('SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p', [this.channel, payloads]);
      return settledAll(payloads.map(() => undefined));
    },
    { maxOps: 256, maxBytes: 1024 * 1024 },
  );

  /** Migrates `relay_live_bodies`, connects the listener and LISTENs before resolving. */
  static async open(o: PgLiveFanoutOptions): Promise<PgLiveFanout> {
    await migratePg(o.pool, PG_LIVE_MIGRATIONS, PG_LIVE_NAMESPACE);
    const f = new PgLiveFanout(o);
    try {
      await f.connect();
    } catch (e) {
      await f.close();
      throw e;
    }
    return f;
  }

  private constructor(private readonly o: PgLiveFanoutOptions) {
    this.processId = o.processId ?? randomUUID();
    this.channel = schemaChannel('ddn_live_', o.schema);
    this.nowMs = o.nowMs ?? Date.now;
    this.sweeper = setInterval(
      () => void Promise.all([this.sweep(), this.presence.sweep()]).catch((err: unknown) => o.logger?.warn({ err }, 'live sweep failed')),
      SWEEP_INTERVAL_MS,
    );
    this.sweeper.unref();
    this.looker = setInterval(() => void this.look().catch((err: unknown) => o.logger?.warn({ err }, 'live listener look failed')), LOOK_INTERVAL_MS);
    this.looker.unref();
    this.presence = new PgLivePresence(o.pool, this.processId, o.logger === undefined ? {} : { logger: o.logger });
    this.beater = setInterval(() => void this.beat(), BEAT_MS);
    this.beater.unref();
    this.ownPrefix = `{"o":${JSON.stringify(this.processId)},`;
  }

  /** Whether this process announces its pushes now (another process listens, or may). */
  get announcing(): boolean {
    return this.othersListening;
  }

  /** Looks whether another session holds the listener lock, on the listening connection (every {@link LOOK_INTERVAL_MS}). */
  async look(): Promise<void> {
    const client = this.client;
    if (client === undefined || this.closed) return;
    const heard = this.othersHeard;
    const r = await client.query<{ others: boolean }>(othersListeningSql(this.channel));
    this.settleLook(r.rows[0]?.others === true, heard);
  }

  private settleLook(others: boolean, heardBefore: number): void {
    this.othersListening = others || this.othersHeard !== heardBefore;
  }

  /** Delivers announcements to these sessions from now on (before: they are dropped — no sessions exist yet). */
  attach(sessions: LocalLiveSessions): this {
    this.sessions = sessions;
    this.presence.attach(sessions);
    sessions.watch((did) => this.presence.change(did));
    return this;
  }

  /** Says this process is alive, over the listening connection (none while it reconnects: it is not asked then). */
  private async beat(): Promise<void> {
    const client = this.client;
    if (client === undefined || this.closed) return;
    await this.presence.beat(client).catch((err: unknown) => this.o.logger?.warn({ err }, 'live presence beat failed'));
  }

  /** Open sessions of `did` on this process (sessions of other processes are not known here). */
  count(did: string): number {
    return this.sessions?.count(did) ?? 0;
  }

  async push(did: string, envelopeJson: string): Promise<LiveReach> {
    const local = this.sessions?.push(did, envelopeJson) ?? NO_REACH;
    if (this.closed || !this.othersListening) return local;
    await this.track(this.announce(did, envelopeJson), 'live announcement failed (the Cache copy remains)', did);
    return local;
  }

  /** `sent`, logged when it fails and waited for by {@link close}; never rejects. */
  private async track(sent: Promise<void>, failure: string, did?: string): Promise<void> {
    const settled = sent.catch((err: unknown) => this.o.logger?.warn({ err, did }, failure));
    this.outbound.add(settled);
    try {
      await settled;
    } finally {
      this.outbound.delete(settled);
    }
  }

  async pushElsewhere(did: string, envelopeJson: string): Promise<LiveReach> {
    if (this.closed || !this.othersListening) return NO_REACH;
    if (this.openAsks >= (this.o.maxOpenAsks ?? MAX_OPEN_ASKS)) {
      this.askCounts.failed++;
      return NO_REACH;
    }
    this.openAsks++;
    try {
      return await this.ask(did, envelopeJson);
    } catch (err) {
      this.askCounts.failed++;
      this.o.logger?.warn({ err, did }, 'other Relay processes could not be asked to push live');
      return NO_REACH;
    } finally {
      this.openAsks--;
    }
  }

  private async ask(did: string, envelopeJson: string): Promise<LiveReach> {
    const holders = await this.presence.holders(did);
    if (holders.length === 0) {
      this.askCounts.none++;
      return NO_REACH;
    }
    const q = randomUUID();
    const open: OpenAsk = { waiting: new Set(holders), reach: { sessions: 0, authenticated: 0 }, done: () => undefined };
    const answered = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), this.o.askWaitMs ?? ASK_WAIT_MS);
      open.done = () => {
        clearTimeout(timer);
        resolve(open.waiting.size === 0);
      };
    });
    this.asks.set(q, open);
    try {
      await this.announce(did, envelopeJson, { q, t: holders });
      const all = await answered;
      const reach = { ...open.reach };
      this.askCounts[!all ? 'late' : reach.sessions > 0 ? 'reached' : 'unreached']++;
      return reach;
    } finally {
      this.asks.delete(q);
      open.done();
    }
  }

  /** An answer to one of this process's asks (others' are ignored). */
  private answer(payload: string): void {
    let a: Answer;
    try {
      a = JSON.parse(payload) as Answer;
    } catch (err) {
      this.o.logger?.warn({ err }, 'a live answer that is not JSON: ignored');
      return;
    }
    const open = this.asks.get(a.k);
    if (open === undefined || !open.waiting.delete(a.o)) return;
    open.reach.sessions += a.s;
    open.reach.authenticated += a.a;
    if (open.waiting.size === 0) open.done();
  }

  private async announce(did: string, envelopeJson: string, ask?: { q: string; t: string[] }): Promise<void> {
    const inline = JSON.stringify({ o: this.processId, n: ++this.announced, d: did, e: envelopeJson, ...ask } satisfies Announcement);
    const bytes = Buffer.byteLength(inline, 'utf8');
    if (bytes <= MAX_NOTIFY_PAYLOAD_BYTES) {
      // one transaction for the announcements of one turn, queued in their order
      await this.inline.submit('', inline, bytes);
      return;
    }
    const id = randomUUID();
    const byRef = JSON.stringify({ o: this.processId, d: did, id, ...ask } satisfies Announcement);
    // One statement, one transaction: the row is committed when the notification is delivered.
    await this.o.pool.query(
      `WITH ins AS (INSERT INTO relay_live_bodies (id, did, body, created_at_ms) VALUES ($1, $2, $3, $4) RETURNING id)
       SELECT pg_notify($5, $6) FROM ins`,
      [id, did, Buffer.from(envelopeJson, 'utf8'), this.nowMs(), this.channel, byRef],
    );
  }

  /** Deletes large-envelope rows older than the retention; returns how many. */
  async sweep(): Promise<number> {
    const r = await this.o.pool.query('DELETE FROM relay_live_bodies WHERE created_at_ms < $1', [this.nowMs() - LIVE_BODY_RETENTION_MS]);
    return r.rowCount ?? 0;
  }

  private async connect(): Promise<void> {
    // scoped to the schema as the pool is (its beat writes relay_live_processes)
    const client = new pg.Client({ connectionString: this.o.url, options: `-c search_path="${this.o.schema}"` });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    client.on('notification', (msg) => {
      if (msg.channel !== this.channel || msg.payload === undefined) return;
      this.queue(msg.payload);
    });
    this.client = client;
    try {
      await client.connect();
      const heard = this.othersHeard;
      // listening, then holding the listener lock, then saying so, then whether another session listens: one
      // round trip (the statements of one simple query commit together)
      const hello = JSON.stringify({ o: this.processId, d: '', l: 1 } satisfies Announcement);
      const results = (await client.query(
        `LISTEN "${this.channel}"; SELECT pg_advisory_lock_shared(${listenerLock(this.channel)}); ` +
          `SELECT pg_notify(${pg.escapeLiteral(this.channel)}, ${pg.escapeLiteral(hello)}); ${othersListeningSql(this.channel)}`,
      )) as unknown as pg.QueryResult<{ others: boolean }>[];
      this.settleLook(results.at(-1)?.rows[0]?.others === true, heard);
      await this.presence.beat(client);
      if (this.client === client) this.listens++;
    } catch (e) {
      this.client = undefined;
      await client.end().catch(() => undefined);
      throw e;
    }
    this.reconnectMs = RECONNECT_MIN_MS;
  }

  /** The listening connection failed or ended: reconnect with backoff (announcements meanwhile are lost). */
  private lost(client: pg.Client, err?: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    if (this.closed) return;
    this.o.logger?.warn({ err }, 'live listener connection lost; reconnecting');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer !== undefined) return;
    const delay = this.reconnectMs;
    this.reconnectMs = Math.min(this.reconnectMs * 2, RECONNECT_MAX_MS);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.closed) return;
      this.connect().catch((err: unknown) => {
        this.o.logger?.warn({ err }, 'live listener reconnect failed');
        this.scheduleReconnect();
      });
    }, delay);
    this.reconnectTimer.unref();
  }

  /** Queues an announcement behind those received before it, or drops it when {@link MAX_QUEUED_ANNOUNCEMENTS} wait. */
  private queue(payload: string): void {
    if (payload.startsWith(this.ownPrefix)) return; // the origin already pushed to its own sessions
    if (payload.startsWith(ANSWER_PREFIX)) return this.answer(payload);
    if (this.queued >= (this.o.maxQueued ?? MAX_QUEUED_ANNOUNCEMENTS)) {
      if (this.droppedAnnouncements++ === this.droppedLogged) {
        this.o.logger?.warn({ queued: this.queued, dropped: this.droppedAnnouncements }, 'live announcements waiting at their bound: later ones dropped');
      }
      return;
    }
    this.queued++;
    this.inbound = this.inbound
      .then(() => this.receive(payload))
      .catch((err: unknown) => {
        this.o.logger?.warn({ err }, 'live announcement could not be delivered');
      })
      .finally(() => {
        // the queue has room again: the next drop is logged
        if (--this.queued === 0) this.droppedLogged = this.droppedAnnouncements;
      });
  }

  private async receive(payload: string): Promise<void> {
    const a = JSON.parse(payload) as Announcement;
    if (a.o === this.processId || typeof a.d !== 'string') return;
    // another process: it listens (a hello), or announces (a process of an older version holds no lock)
    this.othersHeard++;
    this.othersListening = true;
    if (a.l === 1) return;
    const reach = await this.pushHere(a);
    if (typeof a.q === 'string' && Array.isArray(a.t) && a.t.includes(this.processId)) {
      // not waited for: the next announcement need not wait for this answer's round trip
      const answer = JSON.stringify({ k: a.q, o: this.processId, s: reach.sessions, a: reach.authenticated } satisfies Answer);
      void this.track(this.inline.submit('', answer, Buffer.byteLength(answer)), 'live answer failed (the asking process counts no reach)');
    }
  }

  /** Pushes another process's announcement to this process's sessions of its DID. */
  private async pushHere(a: Announcement): Promise<LiveReach> {
    const sessions = this.sessions;
    if (sessions === undefined || sessions.count(a.d) === 0) return NO_REACH;
    if (typeof a.e === 'string') return sessions.push(a.d, a.e);
    if (typeof a.id !== 'string') return NO_REACH;
    const r = await this.o.pool.query<{ body: Buffer }>('SELECT body FROM relay_live_bodies WHERE id = $1 AND did = $2', [a.id, a.d]);
    const row = r.rows[0];
    return row === undefined ? NO_REACH : sessions.push(a.d, row.body.toString('utf8'));
  }

  /** How many times a listening connection was established (1 after open; more after reconnects). */
  get listenCount(): number {
    return this.listens;
  }

  /** The backend pid of the listening connection, when connected (tests: to cut it). */
  get listenerPid(): number | undefined {
    return (this.client as (pg.Client & { processID?: number }) | undefined)?.processID;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    clearInterval(this.looker);
    clearInterval(this.beater);
    for (const open of this.asks.values()) open.done();
    if (this.reconnectTimer !== undefined) clearTimeout(this.reconnectTimer);
    await Promise.all([...this.outbound]);
    await this.presence.close().catch((err: unknown) => this.o.logger?.warn({ err }, 'live presence could not be removed'));
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
    await this.inbound;
  }
}
