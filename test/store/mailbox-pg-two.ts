/** Two PostgreSQL mailbox stores on one schema (two pools: two Cache processes), for the hot-recipient and lease tests. */
import { randomUUID } from 'node:crypto';
import { openPgPool } from '../../src/store/postgres/pool.js';
import { PgMailboxStore } from '../../src/store/postgres/mailbox-store.js';
import { freshPgSchema } from '../support/pg.js';
import { claimOf } from './mailbox-fixtures.js';

/** Rows of a query on the schema. */
export type Sql = (q: string, p?: unknown[]) => Promise<Record<string, unknown>[]>;

/** Two stores on one fresh schema (each with its own pool, as two Cache processes), closed and dropped after `fn`. */
export async function withTwo(fn: (a: PgMailboxStore, b: PgMailboxStore, sql: Sql) => Promise<void>): Promise<void> {
  const db = await freshPgSchema();
  const a = await PgMailboxStore.open(db.pool);
  const b = await PgMailboxStore.open(await openPgPool({ url: db.url, schema: db.schema }), {}, true);
  try {
    await fn(a, b, async (q, p) => (await db.pool.query(q, p)).rows as Record<string, unknown>[]);
  } finally {
    await a.close();
    await b.close();
    await db.drop();
  }
}

/** A node-request claim of its own for each store (as a Relay's signed store carries). */
export const nodeClaim = () => claimOf(randomUUID(), { scope: 'node-request', did: 'did:platform:4444444444444444' });
