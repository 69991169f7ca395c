/**
 * A Directory node on PostgreSQL (`--db` with the directory role): its ledger lives in the database and its data
 * directory holds a replica that is rebuilt whenever it does not match the database; a data directory of
 * another chain is refused with a message saying what to copy. Registers only when DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { to0x } from '../../src/base/bytes.js';
import { DataDirError } from '../../src/app/node-keys.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { startTestNode } from '../support/network.js';

if (PG_URL) {
  describe('Directory node on PostgreSQL', () => {
    it('rebuilds its replica from whichever database it is pointed at, and refuses a database of another chain', async () => {
      const x = await freshPgSchema();
      const y = await freshPgSchema();
      const dataDir = mkdtempSync(join(tmpdir(), 'ddn-pg-node-'));
      const on = (schema: string, dir?: string) => startTestNode(['--roles', 'directory', '--db', x.url, '--db-schema', schema], dir);
      const dbBlock1 = async (pool: typeof x.pool) =>
        to0x((await pool.query<{ hash: Buffer }>('SELECT hash FROM ledger_blocks WHERE number = 1')).rows[0]!.hash);
      try {
        // First start on X: the node registers its node DID, so the chain grows.
        const first = await on(x.schema, dataDir);
        await first.identity.ready;
        assert.ok(first.ledger.headRef().number >= 1);
        assert.equal(first.ledger.block(1)!.block.hash.length, 32);
        await first.stop(true);

        // Another data directory has another attestor key, hence another genesis: refused.
        await assert.rejects(on(x.schema), (e: unknown) => e instanceof DataDirError && /copy genesis\.json and attestor\.key/.test(e.message));

        // The same data directory on a new schema Y: the replica (X's chain) does not match, so it is rebuilt.
        const onY = await on(y.schema, dataDir);
        await onY.identity.ready;
        assert.equal(to0x(onY.ledger.block(1)!.block.hash), await dbBlock1(y.pool));
        await onY.stop(true);

        // And back on X: rebuilt again, reading X's blocks.
        const back = await on(x.schema, dataDir);
        assert.equal(to0x(back.ledger.block(1)!.block.hash), await dbBlock1(x.pool));
        assert.notEqual(await dbBlock1(x.pool), await dbBlock1(y.pool));
        await back.stop();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
        await x.drop();
        await y.drop();
      }
    });
  });
}
