/** The DnsChallengeStore contract on SQLite: each test on its own file in a temp dir, handles as separate connections. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite, type SqliteDb } from '../../src/store/sqlite/database.js';
import { SqliteDnsChallengeStore } from '../../src/store/sqlite/dns-challenge-store.js';
import { dnsChallengeContract } from './dns-challenge-contract.js';

dnsChallengeContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-dns-challenges-'));
  const path = join(dir, 'directory.sqlite');
  const dbs: SqliteDb[] = [];
  const openStore = () => {
    const db = openSqlite(path, [], 'directory');
    dbs.push(db);
    return new SqliteDnsChallengeStore(db);
  };
  return {
    store: openStore(),
    another: async () => openStore(),
    async close() {
      for (const db of dbs) db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
