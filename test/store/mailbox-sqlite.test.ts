/** The MailboxStore contract on SQLite: each test on its own file in a temp dir. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MailboxStore } from '../../src/cache/mailbox-store.js';
import { SqliteMailboxStore } from '../../src/store/sqlite/mailbox-store.js';
import { mailboxContract } from './mailbox-contract.js';

mailboxContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-mailbox-'));
  const path = join(dir, 'cache.sqlite');
  const stores: MailboxStore[] = [SqliteMailboxStore.open(path)];
  return {
    store: stores[0],
    async another() {
      const s = SqliteMailboxStore.open(path);
      stores.push(s);
      return s;
    },
    async close() {
      for (const s of stores) await s.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
