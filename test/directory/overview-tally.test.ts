/**
 * `GET /overview`'s counts from the feed's tally (src/store/sqlite/ledger-feed.ts): kept as each block commits,
 * they equal at every block what a fold of the whole feed counts (the way the overview counted before), and the
 * feed migration that adds the tally to a ledger built before it computes the same for every block; the route's
 * latest operations are the feed's newest entries. On a SQLite ledger file, through the Directory's routes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { FeedSummary, FeedTally } from '../../src/ledger/store.js';
import { openSqlite, type SqliteDb } from '../../src/store/sqlite/database.js';
import { LEDGER_FEED_NAMESPACE } from '../../src/store/sqlite/ledger-feed.js';
import { LEDGER_MIGRATIONS, SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';
import { registerApplication } from '../support/application-flows.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { mutate, registerDid } from '../support/directory-flows.js';
import { operatorOf, registerNamed } from '../support/persona-flows.js';

type Json = Record<string, unknown>;

/** The counts of the feed's entries through block `maxBlock`, folded one by one. */
function fold(feed: readonly FeedSummary[], maxBlock: number): FeedTally {
  const t: FeedTally = { dids: 0, deletedDids: 0, personas: 0, applications: 0, operations: 0 };
  const personas = new Set<string>();
  for (const e of feed) {
    if (e.blockNumber > maxBlock || e.tx === undefined) continue;
    t.operations++;
    if (e.tx.status !== 'included') continue;
    if (e.tx.action === 'register_did') t.dids++;
    else if (e.tx.action === 'delete_did') {
      t.dids--;
      t.deletedDids++;
    } else if (e.tx.action === 'register_application') t.applications++;
    else if (e.tx.action === 'register_persona' || e.tx.action === 'register_named_persona') personas.add(e.tx.subject);
  }
  return { ...t, personas: personas.size };
}

describe("the overview's counts from the feed's tally", () => {
  let h: DirectoryHarness;
  let head: number;
  let feed: FeedSummary[];
  const opened: SqliteDb[] = [];
  const openStore = () => {
    const db = openSqlite(join(h.dir, 'ledger.sqlite'), LEDGER_MIGRATIONS, 'ledger');
    opened.push(db);
    return { db, store: new SqliteLedgerStore(db) };
  };

  before(async () => {
    h = await startDirectory();
    // one block per step, so the counts differ from block to block
    const step = async (work: () => Promise<unknown>) => {
      await work();
      h.settle();
    };
    const op = await operatorOf(h, 81);
    h.settle();
    await step(() => registerNamed(h, 'tallyshop', op));
    await step(() => registerNamed(h, 'tallystore', op));
    await step(() => registerApplication(h, 'tally.app', op));
    const a = await registerDid(h, 82);
    const b = await registerDid(h, 83);
    h.settle();
    await step(() => mutate(h, a.did, a.key, 'delete_did'));
    await step(() => registerDid(h, 84));
    await step(() => mutate(h, b.did, b.key, 'delete_did'));
    head = h.ledger.finalizedRefNow().number;
    feed = h.ledger.finalizedFeedSummary(0, 100_000);
  });
  after(async () => {
    for (const db of opened) db.close();
    await h?.close();
  });

  it('equals the fold of the feed at every block, kept as blocks commit', () => {
    const { store } = openStore();
    assert.ok(head >= 8, `blocks: ${head}`);
    const last = store.feedTally(head);
    assert.deepEqual(last, { dids: 2, deletedDids: 2, personas: 2, applications: 1, operations: last.operations });
    for (let n = 0; n <= head; n++) assert.deepEqual(store.feedTally(n), fold(feed, n), `block ${n}`);
    assert.deepEqual(store.feedTally(head + 100), fold(feed, head), 'past the head: the head');
  });

  it('is what GET /overview counts, its latest operations the newest entries of the feed', async () => {
    const r = await h.call('GET', '/overview?limit=5');
    assert.equal(r.status, 200);
    const t = fold(feed, head);
    assert.deepEqual(r.body.counts, {
      dids: t.dids,
      deleted_dids: t.deletedDids,
      personas: t.personas,
      applications: t.applications,
      operations: t.operations,
    });
    const newest = feed
      .filter((e) => e.tx !== undefined)
      .slice(-5)
      .reverse();
    assert.deepEqual(
      (r.body.recent_operations as Json[]).map((o) => [o.block_number, o.block_index, o.tx_hash, o.action, o.subject, o.success]),
      newest.map((e) => [e.blockNumber, e.tx!.blockIndex, e.tx!.txHash, e.tx!.action, e.tx!.subject, e.tx!.status === 'included']),
    );
  });

  it('is computed for every block by the migration that adds it to a ledger built before it', () => {
    const { db, store } = openStore();
    const kept = Array.from({ length: head + 1 }, (_, n) => store.feedTally(n));
    // the ledger as the feed's migration 1 left it
    db.exec(
      `DROP TABLE ledger_feed_tally; DROP TABLE ledger_feed_personas; DELETE FROM schema_migrations WHERE namespace = '${LEDGER_FEED_NAMESPACE}' AND version = 2`,
    );
    const again = openStore().store;
    for (let n = 0; n <= head; n++) assert.deepEqual(again.feedTally(n), kept[n], `block ${n}`);
    assert.deepEqual(again.feedTally(head), fold(feed, head));
  });

  it('tallies, when the file is opened, the blocks an older version wrote without their tally', () => {
    const { db, store } = openStore();
    const kept = Array.from({ length: head + 1 }, (_, n) => store.feedTally(n));
    // blocks written after the migration by a store that keeps no tally: no rows, their personas not kept
    const from = head - 3;
    db.exec(`DELETE FROM ledger_feed_tally WHERE block_number >= ${from}; DELETE FROM ledger_feed_personas WHERE block_number >= ${from}`);
    assert.deepEqual(store.feedTally(head), kept[from - 1], 'stale until the file is opened');
    const again = openStore().store;
    for (let n = 0; n <= head; n++) assert.deepEqual(again.feedTally(n), kept[n], `block ${n}`);
  });
});
