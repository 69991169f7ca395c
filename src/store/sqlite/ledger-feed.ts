/**
 * The export feed's rows in a SQLite ledger store (docs/mirrors.md): one row per extrinsic of every block, in block
 * order, numbered by `seq` as the block is committed — and one row for a block without extrinsics, so a follower
 * sees every header. The extrinsic bytes stay in ledger_txs (a transaction in a block keeps them).
 * Every store that holds the same blocks numbers them the same way, so a replica of a shared PostgreSQL ledger
 * serves the same feed as every other Directory process of the deployment.
 *
 * Beside the rows, the feed's tally (`GET /overview`'s counts, migration 2): after each block with transactions, the
 * counts of every feed row up to it — DIDs registered less those deleted, deletions, applications and personas
 * registered (included transactions only), and transactions — kept as the block commits, so that the counts at
 * any block are one row's read, not a fold of the whole feed (6 s at a million DIDs). The personas are counted
 * once each (their subjects are kept). Blocks a store of an older version wrote after the migration (one left
 * running beside `ddn migrate`) have no tally row: they are tallied when the file is next opened.
 */
import type { FeedEntry, FeedSummary, FeedTally, TxRecord, TxStatus } from '../../ledger/store.js';
import { migrate, type Migration, type SqliteDb } from './database.js';

/** A namespace of its own, so the feed's migrations never collide with the ledger's. */
export const LEDGER_FEED_NAMESPACE = 'ledger-feed';

export const LEDGER_FEED_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE ledger_feed (
        seq INTEGER PRIMARY KEY, block_number INTEGER NOT NULL, block_index INTEGER);
      CREATE INDEX ledger_feed_block ON ledger_feed (block_number);
      INSERT INTO ledger_feed (block_number, block_index)
        SELECT b.number, t.block_index FROM ledger_blocks b LEFT JOIN ledger_txs t ON t.block_number = b.number
        WHERE b.number > 0 ORDER BY b.number, t.block_index;
    `,
  },
  {
    // the tally of the feed so far, counted as the fold of GET /overview counted it (src/directory/overview.ts
    // before this migration): each feed row's transaction is its position's newest row in ledger_txs
    version: 2,
    sql: `
      CREATE TABLE ledger_feed_tally (
        block_number INTEGER PRIMARY KEY, dids INTEGER NOT NULL, deleted_dids INTEGER NOT NULL,
        personas INTEGER NOT NULL, applications INTEGER NOT NULL, operations INTEGER NOT NULL);
      CREATE TABLE ledger_feed_personas (subject TEXT PRIMARY KEY, block_number INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TEMP TABLE feed_tally_txs AS
        SELECT f.block_number AS b, t.status = 'included' AS ok, json_extract(t.meta, '$.action') AS a,
          json_extract(t.meta, '$.subject') AS subject
        FROM ledger_feed f JOIN ledger_txs t ON t.seq = (
          SELECT seq FROM ledger_txs WHERE block_number = f.block_number AND block_index = f.block_index ORDER BY seq DESC LIMIT 1)
        WHERE f.block_index IS NOT NULL;
      INSERT INTO ledger_feed_personas (subject, block_number)
        SELECT subject, min(b) FROM feed_tally_txs WHERE ok AND a IN ('register_persona', 'register_named_persona') GROUP BY subject;
      INSERT INTO ledger_feed_tally (block_number, dids, deleted_dids, personas, applications, operations)
        SELECT b, sum(reg - del) OVER w, sum(del) OVER w, sum(coalesce(p.n, 0)) OVER w, sum(apps) OVER w, sum(ops) OVER w
        FROM (
          SELECT b, sum(CASE WHEN ok AND a = 'register_did' THEN 1 ELSE 0 END) AS reg,
            sum(CASE WHEN ok AND a = 'delete_did' THEN 1 ELSE 0 END) AS del,
            sum(CASE WHEN ok AND a = 'register_application' THEN 1 ELSE 0 END) AS apps, count(*) AS ops
          FROM feed_tally_txs GROUP BY b) per
        LEFT JOIN (SELECT block_number, count(*) AS n FROM ledger_feed_personas GROUP BY block_number) p ON p.block_number = per.b
        WINDOW w AS (ORDER BY b ROWS UNBOUNDED PRECEDING);
      DROP TABLE feed_tally_txs;
    `,
  },
];

/** Persona registrations: a persona counts once, from its first included one. */
const PERSONA_REGISTRATIONS = new Set(['register_persona', 'register_named_persona']);

/** The tally before any block. */
const NO_TALLY: FeedTally = { dids: 0, deletedDids: 0, personas: 0, applications: 0, operations: 0 };

/** What the tally reads of a transaction of the feed. */
interface TalliedTx {
  status: TxStatus;
  action: string;
  subject: string;
}

/** Feed rows read at a time when the tally catches up. */
const CATCH_UP_PAGE = 5000;

interface TallyRow {
  dids: number;
  deleted_dids: number;
  personas: number;
  applications: number;
  operations: number;
}

interface FeedRow {
  seq: number;
  block_number: number;
  block_index: number | null;
}

interface SummaryRow extends FeedRow {
  tx_hash: string | null;
  extrinsic: string;
  status: TxStatus;
  action: string;
  subject: string;
}

/** The feed's statements over one ledger database (its migrations applied by the constructor). */
export class SqliteLedgerFeed {
  private readonly q;

  constructor(
    private readonly db: SqliteDb,
    private readonly txAt: (blockNumber: number, blockIndex: number) => TxRecord | undefined,
  ) {
    migrate(db, LEDGER_FEED_MIGRATIONS, LEDGER_FEED_NAMESPACE);
    this.q = {
      insert: db.prepare('INSERT INTO ledger_feed (block_number, block_index) VALUES (?, ?)'),
      after: db.prepare('SELECT * FROM ledger_feed WHERE seq > ? AND block_number <= ? ORDER BY seq LIMIT ?'),
      // the transaction at each position as txAt reads it (its newest row), its action and subject out of its meta
      summaryAfter: db.prepare<[number, number, number], SummaryRow>(
        `SELECT f.seq, f.block_number, f.block_index, t.tx_hash, t.extrinsic, t.status,
           json_extract(t.meta, '$.action') AS action, json_extract(t.meta, '$.subject') AS subject
         FROM ledger_feed f LEFT JOIN ledger_txs t ON t.seq = (
           SELECT seq FROM ledger_txs WHERE block_number = f.block_number AND block_index = f.block_index ORDER BY seq DESC LIMIT 1)
         WHERE f.seq > ? AND f.block_number <= ? ORDER BY f.seq LIMIT ?`,
      ),
      countInBlock: db.prepare<[number], { n: number }>('SELECT count(block_index) AS n FROM ledger_feed WHERE block_number = ?'),
      // the index on block_number holds seq (the rowid) too: one index step, not a scan
      last: db.prepare('SELECT seq AS s FROM ledger_feed WHERE block_number <= ? ORDER BY block_number DESC, seq DESC LIMIT 1'),
      // the newest transactions up to a seq, newest first (rows of blocks without any skipped)
      summaryLatest: db.prepare<[number, number], SummaryRow>(
        `SELECT f.seq, f.block_number, f.block_index, t.tx_hash, t.extrinsic, t.status,
           json_extract(t.meta, '$.action') AS action, json_extract(t.meta, '$.subject') AS subject
         FROM ledger_feed f JOIN ledger_txs t ON t.seq = (
           SELECT seq FROM ledger_txs WHERE block_number = f.block_number AND block_index = f.block_index ORDER BY seq DESC LIMIT 1)
         WHERE f.seq <= ? AND f.block_index IS NOT NULL ORDER BY f.seq DESC LIMIT ?`,
      ),
      tallyAt: db.prepare<[number], TallyRow>(
        'SELECT dids, deleted_dids, personas, applications, operations FROM ledger_feed_tally WHERE block_number <= ? ORDER BY block_number DESC LIMIT 1',
      ),
      // (a block is committed once; should one be recorded again, its row is replaced, not doubled)
      insertTally: db.prepare(
        'INSERT OR REPLACE INTO ledger_feed_tally (block_number, dids, deleted_dids, personas, applications, operations) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      insertPersona: db.prepare('INSERT OR IGNORE INTO ledger_feed_personas (subject, block_number) VALUES (?, ?)'),
      lastTallied: db.prepare<[], { b: number | null }>('SELECT max(block_number) AS b FROM ledger_feed_tally'),
      txAfter: db.prepare<[number], { s: number }>('SELECT seq AS s FROM ledger_feed WHERE seq > ? AND block_index IS NOT NULL LIMIT 1'),
    };
    this.catchUpTally();
  }

  /** Tallies the blocks with transactions that have no tally row yet (see the module comment); usually none. */
  private catchUpTally(): void {
    let after = this.lastSeq(this.q.lastTallied.get()?.b ?? 0);
    if (this.q.txAfter.get(after) === undefined) return;
    this.db.transaction(() => {
      for (;;) {
        const page = this.summaryAfter(after, Number.MAX_SAFE_INTEGER, CATCH_UP_PAGE);
        // a page ends on a whole block unless it is full: its last block is read again with the next page
        const full = page.length === CATCH_UP_PAGE;
        const lastBlock = page.at(-1)?.blockNumber;
        const blocks = new Map<number, TalliedTx[]>();
        for (const e of page) {
          if (full && e.blockNumber === lastBlock) break;
          after = e.seq;
          if (e.tx === undefined) continue;
          const txs = blocks.get(e.blockNumber);
          if (txs === undefined) blocks.set(e.blockNumber, [e.tx]);
          else txs.push(e.tx);
        }
        for (const [n, txs] of blocks) this.tallyBlock(n, txs);
        if (!full) return;
      }
    })();
  }

  /** The rows of a block being committed (inside the caller's transaction): its extrinsics in order, or one empty row. */
  recordBlock(blockNumber: number, txs: readonly TxRecord[]): void {
    const own = txs.filter((t) => t.blockNumber === blockNumber && t.blockIndex !== undefined).sort((a, b) => a.blockIndex! - b.blockIndex!);
    if (own.length === 0) this.q.insert.run(blockNumber, null);
    for (const t of own) this.q.insert.run(blockNumber, t.blockIndex);
    if (own.length > 0)
      this.tallyBlock(
        blockNumber,
        own.map((t) => ({ status: t.status, action: t.meta.action, subject: t.meta.subject })),
      );
  }

  /** The tally through block `blockNumber`, whose transactions are `own` (inside the block's transaction). */
  private tallyBlock(blockNumber: number, own: readonly TalliedTx[]): void {
    const t = this.tallyAt(blockNumber - 1);
    for (const tx of own) {
      t.operations++;
      if (tx.status !== 'included') continue;
      const action = tx.action;
      if (action === 'register_did') t.dids++;
      else if (action === 'delete_did') {
        t.dids--;
        t.deletedDids++;
      } else if (action === 'register_application') t.applications++;
      else if (PERSONA_REGISTRATIONS.has(action) && this.q.insertPersona.run(tx.subject, blockNumber).changes === 1) t.personas++;
    }
    this.q.insertTally.run(blockNumber, t.dids, t.deletedDids, t.personas, t.applications, t.operations);
  }

  /** The tally of the feed through block `maxBlock`. */
  tallyAt(maxBlock: number): FeedTally {
    const r = this.q.tallyAt.get(maxBlock);
    if (r === undefined) return { ...NO_TALLY };
    return { dids: r.dids, deletedDids: r.deleted_dids, personas: r.personas, applications: r.applications, operations: r.operations };
  }

  /** The newest `limit` transactions of the feed through block `maxBlock`, newest first. */
  latestSummaries(maxBlock: number, limit: number): FeedSummary[] {
    return this.q.summaryLatest.all(this.lastSeq(maxBlock), limit).map((r) => ({
      seq: r.seq,
      blockNumber: r.block_number,
      tx: { blockIndex: r.block_index!, txHash: r.tx_hash!, extrinsic: r.extrinsic, status: r.status, action: r.action, subject: r.subject },
    }));
  }

  after(afterSeq: number, maxBlock: number, limit: number): FeedEntry[] {
    return (this.q.after.all(afterSeq, maxBlock, limit) as FeedRow[]).map((r) => {
      const entry: FeedEntry = { seq: r.seq, blockNumber: r.block_number };
      if (r.block_index === null) return entry;
      const tx = this.txAt(r.block_number, r.block_index);
      if (tx) entry.tx = { ...tx, blockIndex: r.block_index };
      return entry;
    });
  }

  summaryAfter(afterSeq: number, maxBlock: number, limit: number): FeedSummary[] {
    return this.q.summaryAfter.all(afterSeq, maxBlock, limit).map((r) => {
      const entry: FeedSummary = { seq: r.seq, blockNumber: r.block_number };
      if (r.block_index === null || r.tx_hash === null) return entry;
      entry.tx = { blockIndex: r.block_index, txHash: r.tx_hash, extrinsic: r.extrinsic, status: r.status, action: r.action, subject: r.subject };
      return entry;
    });
  }

  /** The transactions of block `n`: its feed rows that have one (through the block index). */
  countInBlock(n: number): number {
    return this.q.countInBlock.get(n)?.n ?? 0;
  }

  lastSeq(maxBlock: number): number {
    return (this.q.last.get(maxBlock) as { s: number } | undefined)?.s ?? 0;
  }
}
