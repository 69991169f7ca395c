/**
 * The extrinsic bytes of every block of a shared PostgreSQL ledger, kept for the export feed (docs/mirrors.md):
 * `ledger_txs` drops a transaction's bytes once it is finished, and each Directory process's replica needs them to
 * serve the feed. A table (and migration namespace) of its own, written with the block and read with it.
 */
import type { TxRecord } from '../../ledger/store.js';
import type { BlockWithEffects, Queryable } from './ledger-tables.js';
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

/** Stores the extrinsic bytes of a block's own transactions (those with bytes), in the block's commit. */
export async function insertBlockExtrinsics(c: Queryable, blockNumber: number, txs: readonly TxRecord[]): Promise<void> {
  const own = txs.filter((t) => t.blockNumber === blockNumber && t.blockIndex !== undefined && t.bytes !== undefined);
  if (own.length === 0) return;
  await c.query(
    `INSERT INTO ledger_block_extrinsics (block_number, block_index, bytes)
     SELECT $1, i, b FROM unnest($2::int[], $3::bytea[]) AS u(i, b)`,
    [blockNumber, own.map((t) => t.blockIndex!), own.map((t) => Buffer.from(t.bytes!))],
  );
}

/** Puts back the stored extrinsic bytes on the blocks' own transactions. */
export async function attachExtrinsics(c: Queryable, blocks: readonly BlockWithEffects[]): Promise<void> {
  if (blocks.length === 0) return;
  const from = blocks[0]!.block.header.number;
  const to = blocks[blocks.length - 1]!.block.header.number;
  const r = await c.query<{ block_number: string | number; block_index: number; bytes: Buffer }>(
    'SELECT block_number, block_index, bytes FROM ledger_block_extrinsics WHERE block_number BETWEEN $1 AND $2',
    [from, to],
  );
  const bytes = new Map(r.rows.map((row) => [`${Number(row.block_number)}:${row.block_index}`, new Uint8Array(row.bytes)]));
  for (const b of blocks) {
    for (const t of b.txs) {
      if (t.blockNumber === undefined || t.blockIndex === undefined) continue;
      const found = bytes.get(`${t.blockNumber}:${t.blockIndex}`);
      if (found) t.bytes = found;
    }
  }
}
