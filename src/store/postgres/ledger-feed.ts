/**
 * The extrinsic bytes of every block of a shared PostgreSQL ledger, kept for the export feed (docs/mirrors.md):
 * `ledger_txs` drops a failed transaction's bytes once it is finished, and each Directory process's replica needs
 * them to serve the feed. A table (and migration namespace) of its own, written by the block's statement
 * (`writeBlockRows`, ledger-tables.ts) and read with the block (`readCatchUp`, ledger-catch-up.ts).
 */
import type { PgMigration } from './pool.js';

export const LEDGER_FEED_PG_NAMESPACE = 'ledger-feed';

export const LEDGER_FEED_PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE ledger_block_extrinsics (
        block_number BIGINT NOT NULL, block_index INTEGER NOT NULL, bytes BYTEA NOT NULL,
        PRIMARY KEY (block_number, block_index));
    `,
  },
];
