/**
 * The export feed and a mirror over a Directory scaled out on PostgreSQL: two Directory processes share one ledger
 * (a schema of this test's own), each serves the same feed — the same seq for the same entry — and a mirror
 * following one of them answers reads with the bodies of the other. Registers only when DDN_TEST_PG_URL is set.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ATTESTOR_KEY_FILE, GENESIS_FILE } from '../../src/app/node-keys.js';
import { caughtUp, feedHead, registerAndChange, sameAnswer, startTestMirror } from '../support/mirror.js';
import { startTestNode } from '../support/network.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { waitFor } from '../support/wait.js';

if (PG_URL) {
  describe('the export feed on PostgreSQL with several Directory processes', () => {
    it('serves one feed from every process, and a mirror of one answers like the other', async () => {
      const pg = await freshPgSchema();
      const dirA = mkdtempSync(join(tmpdir(), 'ddn-feed-pg-'));
      const dirB = mkdtempSync(join(tmpdir(), 'ddn-feed-pg-'));
      const args = ['--roles', 'directory', '--db', pg.url, '--db-schema', pg.schema];
      const a = await startTestNode(args, dirA);
      for (const f of [GENESIS_FILE, ATTESTOR_KEY_FILE]) copyFileSync(join(dirA, f), join(dirB, f));
      const b = await startTestNode(args, dirB);
      const mirror = await startTestMirror(b.urls.directory!);
      try {
        const urlA = a.urls.directory!;
        const urlB = b.urls.directory!;
        const one = await registerAndChange(urlA, 91, 'pg-one');
        const two = await registerAndChange(urlB, 101, 'pg-two');
        const head = await feedHead(urlA);
        await waitFor('process B holds every entry', async () => ((await feedHead(urlB)) >= head ? true : undefined));
        await sameAnswer(urlA, urlB, '/export?after=0');
        await sameAnswer(urlA, urlB, `/export?after=3&count=5`);
        const lines = (await (await fetch(`${urlA}/export`)).text()).trimEnd().split('\n');
        assert.ok(lines.length >= 8);
        assert.ok(
          lines.every((l) => (JSON.parse(l) as { payload: string | null }).payload !== null),
          'every line carries its extrinsic',
        );

        await caughtUp(mirror, urlA);
        for (const [did, alias, txs] of [
          [one.did, 'pg-one', one.txs],
          [two.did, 'pg-two', two.txs],
        ] as const) {
          const d = encodeURIComponent(did);
          for (const path of [`/resolve/${d}`, `/dids/${d}/nonces`, `/aliases/${alias}`, `/delivery-view/${d}`, ...txs.map((t) => `/transactions/${t}`)]) {
            await sameAnswer(urlA, mirror.url, path);
          }
        }
        await sameAnswer(urlA, mirror.url, '/export?after=0');
      } finally {
        await mirror.stop();
        await b.stop();
        await a.stop();
        await pg.drop();
      }
    });
  });
}
