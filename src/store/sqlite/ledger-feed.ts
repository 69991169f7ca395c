/**
 * The export feed's rows in a SQLite ledger store (docs/mirrors.md): one row per extrinsic of every block, in block
 * order, numbered by `seq` as the block is committed — and one row for a block without extrinsics, so a follower
 * sees every header. The extrinsic bytes stay in ledger_txs (a transaction in a block keeps them).
 * Every store that holds the same blocks numbers them the same way, so a replica of a shared PostgreSQL ledger
 * serves the same feed as every other Directory process of the deployment.
 */
import type { FeedEntry, FeedSummary, TxRecord, TxStatus } from '../../ledger/store.js';
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
];

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
    db: SqliteDb,
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
    };
  }

  /** The rows of a block being committed (inside the caller's transaction): its extrinsics in order, or one empty row. */
  recordBlock(blockNumber: number, txs: readonly TxRecord[]): void {
    const own = txs.filter((t) => t.blockNumber === blockNumber && t.blockIndex !== undefined).sort((a, b) => a.blockIndex! - b.blockIndex!);
    if (own.length === 0) this.q.insert.run(blockNumber, null);
    for (const t of own) this.q.insert.run(blockNumber, t.blockIndex);
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
