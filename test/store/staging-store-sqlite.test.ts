/** The RelayStagingStore contract on SQLite: a fresh file per test. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteRelayStagingStore } from '../../src/store/sqlite/relay-staging-store.js';
import { stagingContract } from './staging-contract.js';

stagingContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-relay-store-'));
  const path = join(dir, 'relay.sqlite');
  return {
    open: async () => SqliteRelayStagingStore.open(path),
    dispose: async () => rmSync(dir, { recursive: true, force: true }),
  };
});
