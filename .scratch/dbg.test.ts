import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { makeProfile } from '../src/protocol/profile.js';
import { registerRecipientAt } from '../test/cache/harness.js';
import { freshPgSchema } from '../test/support/pg.js';
import { startTestNode } from '../test/support/network.js';

it('dbg', async () => {
  const pg = await freshPgSchema();
  const db = ['--roles', 'directory', '--db', pg.url, '--db-schema', pg.schema, '--block-time-ms', '50'];
  const d1Dir = mkdtempSync(join(tmpdir(), 'dbg-'));
  const d1 = await startTestNode(db, d1Dir);
  const d2Dir = mkdtempSync(join(tmpdir(), 'dbg-'));
  for (const f of ['genesis.json', 'attestor.key']) copyFileSync(join(d1Dir, f), join(d2Dir, f));
  const d2 = await startTestNode(db, d2Dir);
  const directory = {
    profile: makeProfile('platform'),
    async call(method: string, url: string, payload?: unknown) {
      const res = await fetch(`${d2.urls.directory!}${url}`, { method, ...(payload === undefined ? {} : { body: JSON.stringify(payload), headers: { 'content-type': 'application/json' } }) });
      const body = (await res.json()) as Record<string, unknown>;
      console.log(method, url, res.status, JSON.stringify(body).slice(0, 300));
      return { status: res.status, body };
    },
    settle() {},
  };
  const r = await registerRecipientAt(directory, 91, { cacheEndpoints: ['http://127.0.0.1:9/x'] });
  for (let i = 0; i < 20; i++) {
    await new Promise((res) => setTimeout(res, 200));
    console.log(i, d1.ledger.headRef().number, d2.ledger.headRef().number, d1.ledger.pendingEntries().length, d2.ledger.pendingEntries().length,
      (await fetch(`${d2.urls.directory!}/dids/${encodeURIComponent(r.did)}`)).status);
  }
  const rows = await pg.pool.query("SELECT tx_hash, status, error_name, finished_block FROM ledger_txs ORDER BY seq");
  console.log(rows.rows);
  await d2.stop(); await d1.stop(); await pg.drop();
});
