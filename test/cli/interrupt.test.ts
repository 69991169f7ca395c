/**
 * Ctrl-C in a client command (issue 25, item 8): a `ddn did create` child waiting for finality on a Directory
 * whose ledger produces no blocks is interrupted with SIGINT (exit 130) or SIGTERM (exit 143) and prints one JSON
 * summary saying how far it got (accepted, with its tx hash; recorded in the identity book). A second SIGINT
 * while a command handles the first is not needed: the first already ends it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/app/config.js';
import { startNode, type RunningNode } from '../../src/app/node.js';
import { spawnDdn } from './cli-process.js';
import { checkedNode } from '../support/contract-check.js';

const dir = mkdtempSync(join(tmpdir(), 'ddn-cli-int-'));
let node: RunningNode;

before(async () => {
  const config = loadConfig(['--data-dir', join(dir, 'node'), '--directory-port', '0', '--relay-port', '0', '--cache-port', '0'], {});
  node = await checkedNode(await startNode(config, { logger: pino({ level: 'silent' }), autoProduce: false }));
});
after(async () => {
  await node?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('an interrupted client command', () => {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${signal} while waiting for finality prints a JSON summary and exits ${code}`, async () => {
      const config = join(dir, `config-${signal}`);
      const child = spawnDdn(['did', 'create', '--alias', `int-${signal.toLowerCase()}`, '--timeout', '600'], {
        env: { DDN_DIRECTORY_URL: node.urls.directory!, XDG_CONFIG_HOME: config },
      });
      await child.waitForStderr('waiting for finality');
      child.proc.kill(signal);
      assert.equal(await child.exit, code, child.stderr());
      const lines = child
        .stdout()
        .split('\n')
        .filter((l) => l !== '');
      assert.equal(lines.length, 1, child.stdout());
      const summary = JSON.parse(lines[0]!) as Record<string, unknown>;
      assert.equal(summary.code, 'interrupted');
      assert.equal(summary.error, 'interrupted');
      assert.equal(summary.signal, signal);
      assert.equal(summary.registration_status, 'pending');
      assert.match(String(summary.tx_hash), /^0x[0-9a-f]{64}$/);
      assert.match(String(summary.did), /^did:platform:/);
      assert.equal(typeof summary.elapsed_ms, 'number');
      assert.match(child.stderr(), new RegExp(`ddn did create: interrupted by ${signal}`));
      const book = JSON.parse(readFileSync(join(config, 'ddn', 'identities.json'), 'utf8')) as { identities: { did: string; tx_hash: string }[] };
      assert.deepEqual(
        book.identities.map((i) => [i.did, i.tx_hash]),
        [[summary.did, summary.tx_hash]],
        'accepted, so recorded',
      );
    });
  }
});
