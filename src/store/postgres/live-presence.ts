/**
 * Which Relay process of a PostgreSQL deployment holds live sessions of which DID, so that a process asked to
 * deliver to a recipient with no Cache service and no session of its own knows whom to ask (live-fanout.ts).
 *
 * - `relay_live_presence (did, process_id)`: one row per DID a process holds an open session of.
 * - `relay_live_processes (process_id, seen_at)`: each process's own row, refreshed every {@link BEAT_MS} over its
 *   listening connection (the fan-out calls {@link PgLivePresence.beat}), by the database's clock. A process not
 *   seen for {@link ALIVE_MS} is not asked (its listener is gone: it would not answer); one not seen for
 *   {@link FORGET_MS} is swept with its rows. A process that finds its own row swept writes all its DIDs again.
 *
 * The DIDs whose first session opened or whose last one went are written together in one statement, in the turn
 * after the change (and again after a write that ran meanwhile), each as it stands when written: present or not.
 * A failed write is retried after {@link RETRY_MS} with the DIDs that changed since. At most {@link MAX_CHANGED}
 * DIDs wait: beyond, the next write replaces all the process's rows with its DIDs of the moment.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import type { PgPool } from './pool.js';

/** How often a process says it is alive. */
export const BEAT_MS = 5_000;
/** A process seen this recently is asked. */
export const ALIVE_MS = 3 * BEAT_MS;
/** A process not seen for this long is forgotten with its rows (by any process's sweep). */
export const FORGET_MS = 10 * 60_000;
/** The wait before a failed write is tried again. */
export const RETRY_MS = 1_000;
/** DIDs waiting to be written at most; beyond, the next write rewrites them all. */
export const MAX_CHANGED = 50_000;

/** The tables (migration 2 of the live fan-out's namespace). */
export const LIVE_PRESENCE_SQL = `
  CREATE TABLE relay_live_processes (
    process_id TEXT PRIMARY KEY,
    seen_at TIMESTAMPTZ NOT NULL);
  CREATE TABLE relay_live_presence (
    did TEXT NOT NULL,
    process_id TEXT NOT NULL,
    PRIMARY KEY (did, process_id));
  CREATE INDEX relay_live_presence_process ON relay_live_presence (process_id);
`;

/** What the presence reads of this process's sessions. */
export interface PresenceSessions {
  count(did: string): number;
  dids(): Iterable<string>;
}

type Queryable = Pick<pg.ClientBase, 'query'> | PgPool;

export class PgLivePresence {
  private sessions: PresenceSessions | undefined;
  /** DIDs whose presence changed and is not written yet. */
  private changed = new Set<string>();
  /** The next write replaces all of this process's rows. */
  private rewrite = false;
  private writing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private beats = 0;
  private closed = false;

  constructor(
    private readonly pool: PgPool,
    readonly processId: string,
    private readonly o: { logger?: Logger; maxChanged?: number } = {},
  ) {}

  /** Reads this process's sessions from now on (before: it has none). */
  attach(sessions: PresenceSessions): void {
    this.sessions = sessions;
  }

  /** `did`'s first session opened here, or its last one went. */
  change(did: string): void {
    if (this.rewrite) return this.schedule();
    this.changed.add(did);
    if (this.changed.size > (this.o.maxChanged ?? MAX_CHANGED)) {
      this.changed.clear();
      this.rewrite = true;
    }
    this.schedule();
  }

  /** Says this process is alive (on `via`: the listening connection); rewrites its DIDs when its row had been swept. */
  async beat(via: Queryable): Promise<void> {
    const r = await via.query<{ fresh: boolean }>(
      `INSERT INTO relay_live_processes (process_id, seen_at) VALUES ($1, now())
       ON CONFLICT (process_id) DO UPDATE SET seen_at = now() RETURNING (xmax = 0) AS fresh`,
      [this.processId],
    );
    if (this.beats++ > 0 && r.rows[0]?.fresh === true && this.sessions !== undefined) {
      this.o.logger?.warn('this Relay process had been forgotten by the others: its live sessions are written again');
      this.rewrite = true;
      this.schedule();
    }
  }

  /** The other processes, seen within {@link ALIVE_MS}, that hold an open session of `did`. */
  async holders(did: string): Promise<string[]> {
    const r = await this.pool.query<{ process_id: string }>(
      `SELECT h.process_id FROM relay_live_presence h JOIN relay_live_processes p USING (process_id)
       WHERE h.did = $1 AND h.process_id <> $2 AND p.seen_at > now() - make_interval(secs => $3)`,
      [did, this.processId, ALIVE_MS / 1000],
    );
    return r.rows.map((row) => row.process_id);
  }

  /** Forgets processes not seen for {@link FORGET_MS}, and rows of processes without one; returns the rows removed. */
  async sweep(): Promise<number> {
    const r = await this.pool.query(
      `WITH gone AS (DELETE FROM relay_live_processes WHERE seen_at < now() - make_interval(secs => $1) RETURNING process_id)
       DELETE FROM relay_live_presence h
       WHERE h.process_id IN (SELECT process_id FROM gone)
          OR NOT EXISTS (SELECT 1 FROM relay_live_processes p WHERE p.process_id = h.process_id)`,
      [FORGET_MS / 1000],
    );
    return r.rowCount ?? 0;
  }

  /** Waits for the write in flight, then removes this process's rows (it leaves). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    await this.writing;
    await this.pool.query(`WITH gone AS (DELETE FROM relay_live_processes WHERE process_id = $1) DELETE FROM relay_live_presence WHERE process_id = $1`, [
      this.processId,
    ]);
  }

  /** Whether a write waits to run. */
  get pending(): boolean {
    return this.rewrite || this.changed.size > 0;
  }

  /** The write in flight, if any (tests: to wait for the DIDs to be written). */
  async settled(): Promise<void> {
    while (this.writing !== undefined || this.immediate !== undefined) await (this.writing ?? new Promise((r) => setImmediate(r)));
  }

  private schedule(): void {
    if (this.closed || this.sessions === undefined || this.writing !== undefined || this.immediate !== undefined || this.timer !== undefined) return;
    this.immediate = setImmediate(() => {
      this.immediate = undefined;
      this.writing = this.write().finally(() => {
        this.writing = undefined;
        if (this.pending) this.schedule();
      });
    });
  }

  /** Writes what changed (or everything), as the sessions stand now. */
  private async write(): Promise<void> {
    const sessions = this.sessions;
    if (sessions === undefined) return;
    const rewrite = this.rewrite;
    const changed = this.changed;
    this.rewrite = false;
    this.changed = new Set();
    const present: string[] = [];
    const absent: string[] = [];
    for (const did of rewrite ? sessions.dids() : changed) (sessions.count(did) > 0 ? present : absent).push(did);
    try {
      await this.pool.query(
        rewrite
          ? `WITH gone AS (DELETE FROM relay_live_presence WHERE process_id = $1 AND NOT (did = ANY($2::text[])))
             INSERT INTO relay_live_presence (did, process_id) SELECT unnest($2::text[]), $1 ON CONFLICT DO NOTHING`
          : `WITH gone AS (DELETE FROM relay_live_presence WHERE process_id = $1 AND did = ANY($3::text[]))
             INSERT INTO relay_live_presence (did, process_id) SELECT unnest($2::text[]), $1 ON CONFLICT DO NOTHING`,
        rewrite ? [this.processId, present] : [this.processId, present, absent],
      );
    } catch (err) {
      this.o.logger?.warn({ err }, 'live presence could not be written; trying again');
      if (rewrite) this.rewrite = true;
      else for (const did of changed) this.change(did);
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.schedule();
      }, RETRY_MS);
      this.timer.unref();
    }
  }
}
