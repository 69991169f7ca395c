/** `npm run dev-chain` (scripts/dev-chain.ts) as a real process: its one JSON line, the funded keys, SIGTERM. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { describe, it } from 'node:test';
import pino from 'pino';
import { loadChainKey } from '../../src/chain/chain-key.js';
import { createSubstrateClient } from '../../src/chain/substrate-client.js';
import { startDevChain } from '../support/dev-chain.js';
import { groupMembers } from '../support/processes.js';

describe('npm run dev-chain', () => {
  it('prints one listening line, writes funded keys (mode 0600) and exits 0 on SIGTERM, leaving no process', async () => {
    const chain = await startDevChain({ accounts: 2, balance: 123_456_789n });
    try {
      const line = JSON.parse(chain.line) as Record<string, unknown>;
      assert.deepEqual(Object.keys(line), ['event', 'chain_url', 'genesis_hash', 'accounts']);
      assert.equal(line.event, 'listening');
      assert.match(String(line.chain_url), /^ws:\/\/127\.0\.0\.1:[1-9][0-9]*$/);
      assert.equal(line.genesis_hash, `0x${'45'.repeat(32)}`);
      assert.equal(chain.accounts.length, 2);
      for (const [i, file] of chain.keyFiles.entries()) {
        assert.equal(statSync(file).mode & 0o777, 0o600);
        assert.equal((await loadChainKey(file)).address, chain.accounts[i]);
      }
      const client = createSubstrateClient({ urls: [chain.url], keyFile: chain.keyFiles[1]!, logger: pino({ level: 'silent' }) });
      try {
        await client.connect(60_000);
        assert.equal(await client.balance(), 123_456_789n);
      } finally {
        await client.close();
      }
    } finally {
      assert.equal(await chain.stop(), 0);
    }
    assert.deepEqual(groupMembers(chain.proc.pid!), []);
  });

  it('refuses bad options with a usage line and exit 1', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/dev-chain.ts', '--port', 'x'], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /--port must be 0…65535\nusage: npm run dev-chain/);
  });
});
