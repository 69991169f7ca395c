/**
 * A node's resolve cache across blocks, counted on `/metrics` (`ddn_directory_resolve_answers_total{source}`): a
 * block keeps the cached answers of the DIDs it did not touch — on the embedded SQLite ledger, and on PostgreSQL
 * (`--db`), where the producing process commits its blocks through the shared ledger's sync (registers only when
 * DDN_TEST_PG_URL is set). A cache that learned nothing of a block's keys would drop every answer at each block,
 * and every resolve after it would render again (bench/HISTORY.md, session 27).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { makeProfile } from '../../src/protocol/profile.js';
import { registerRecipientAt } from '../cache/harness.js';
import { fetchJson } from '../cache/http-support.js';
import { scrape, total } from '../support/metrics.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { waitFor } from '../support/wait.js';

const profile = makeProfile('platform');

function keepsAnswers(backend: string, args: () => Promise<{ args: string[]; drop: () => Promise<void> }>): void {
  describe(`the resolve cache of a node on ${backend}`, () => {
    let node: TestNode;
    let drop: (() => Promise<void>) | undefined;

    before(async () => {
      const a = await args();
      drop = a.drop;
      node = await startTestNode([...a.args, '--allow-private-endpoints']);
      await node.identity.ready;
    });
    after(async () => {
      await node?.stop();
      await drop?.();
    });

    const url = () => node.urls.directory!;
    const via = {
      profile,
      call: (method: string, path: string, payload?: unknown) => fetchJson(`${url()}${path}`, { method, ...(payload === undefined ? {} : { body: payload }) }),
      settle() {
        // the node produces its blocks itself
      },
    };
    const resolve = async (did: string) => (await fetch(`${url()}/resolve/${encodeURIComponent(did)}`)).status;
    const resolved = (did: string) => waitFor(`${did} resolves`, async () => ((await resolve(did)) === 200 ? true : undefined));
    const answers = async () => {
      const m = await scrape(url());
      return {
        cached: total(m, 'ddn_directory_resolve_answers_total', { source: 'cached' }),
        rendered: total(m, 'ddn_directory_resolve_answers_total', { source: 'rendered' }),
        head: total(m, 'ddn_ledger_head_block'),
      };
    };

    it('keeps the answers of DIDs a block did not touch, and counts answers by source', async () => {
      const a = await registerRecipientAt(via, 71);
      const b = await registerRecipientAt(via, 72);
      await resolved(a.did);
      await resolved(b.did);
      // both are rendered and kept by now; answered again from the cache
      const kept = await answers();
      assert.equal(await resolve(a.did), 200);
      assert.equal(await resolve(b.did), 200);
      const again = await answers();
      assert.deepEqual({ cached: again.cached - kept.cached, rendered: again.rendered - kept.rendered }, { cached: 2, rendered: 0 });

      // a block that writes another DID's keys only
      const c = await registerRecipientAt(via, 73);
      await resolved(c.did);
      const blocked = await answers();
      assert.ok(blocked.head > again.head, 'a block was made');
      assert.equal(await resolve(a.did), 200);
      assert.equal(await resolve(b.did), 200);
      const afterBlock = await answers();
      assert.equal(afterBlock.head, blocked.head, 'no block came between');
      assert.deepEqual(
        { cached: afterBlock.cached - blocked.cached, rendered: afterBlock.rendered - blocked.rendered },
        { cached: 2, rendered: 0 },
        'the answers of the DIDs the block did not touch stayed cached',
      );
    });
  });
}

keepsAnswers('SQLite', async () => ({ args: [], drop: async () => undefined }));

if (PG_URL) {
  keepsAnswers('PostgreSQL', async () => {
    const pg = await freshPgSchema();
    return { args: ['--db', pg.url, '--db-schema', pg.schema], drop: pg.drop };
  });
}
