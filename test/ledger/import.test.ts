/**
 * Following a ledger through its export feed (docs/mirrors.md): a second ledger imports the first one's blocks
 * by re-executing their extrinsics and ends with the same blocks, state and feed; a block whose header, parent,
 * extrinsics or signatures do not hold is refused and changes nothing; a database from before the feed gets its
 * feed numbered from its blocks.
 */
import type { SqliteDb } from '../../src/store/sqlite/database.js';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { to0x } from '../../src/base/bytes.js';
import { blockHash, extrinsicsRoot } from '../../src/ledger/block.js';
import type { Ledger } from '../../src/ledger/chain.js';
import { BlockImportError } from '../../src/ledger/errors.js';
import { txHashOf } from '../../src/ledger/extrinsic.js';
import { feedBlockJson, feedLineJson, parseFeedLine } from '../../src/ledger/feed.js';
import { BlockAssembler, type AssembledBlock } from '../../src/mirror/block-assembler.js';
import { aliasCall, didOf, Harness, registerCall, rootSigner, seedKey } from './harness.js';

/** Every finalized block of `ledger` after block `after`, as a follower assembles them from the feed. */
function blocksOf(ledger: Ledger, after = 0): AssembledBlock[] {
  const assembler = new BlockAssembler(0);
  const out: AssembledBlock[] = [];
  for (const e of ledger.finalizedFeed(0, 1000)) {
    const b = ledger.block(e.blockNumber)!;
    const line = parseFeedLine(JSON.parse(JSON.stringify(feedLineJson(e, feedBlockJson(b.block, b.txs.length)))));
    const done = assembler.push(line);
    if (done && done.block.header.number > after) out.push(done);
  }
  return out;
}

const A = didOf(51);
const B = didOf(52);
const keyA = seedKey(11);
const keyB = seedKey(12);

function primary(): Harness {
  const h = new Harness();
  h.submit(registerCall(A, keyA));
  h.submit(registerCall(B, keyB));
  h.produce();
  h.apply(aliasCall(A, { kind: 'add', alias: 'first' }, rootSigner(keyA)));
  h.apply(aliasCall(B, { kind: 'add', alias: 'second' }, rootSigner(keyB)));
  return h;
}

test('a follower re-executes every block into the same chain, state and feed', () => {
  const p = primary();
  const m = new Harness();
  try {
    const blocks = blocksOf(p.ledger);
    assert.equal(blocks.length, 3);
    assert.equal(blocks[0]!.txs.length, 2);
    for (const b of blocks) m.ledger.importBlock(b.block, b.txs);
    assert.deepEqual(m.ledger.headRef(), p.ledger.headRef());
    assert.deepEqual(m.record(A), p.record(A));
    assert.deepEqual(m.record(B), p.record(B));
    assert.deepEqual(m.ledger.finalizedFeed(0, 1000), p.ledger.finalizedFeed(0, 1000));
    const tx = blocks[1]!.txs[0]!;
    assert.deepEqual(m.ledger.txView(to0x(txHashOf(tx.bytes)))?.tx.meta, tx.meta);
  } finally {
    p.close();
    m.close();
  }
});

test('a block that does not verify is refused and changes nothing', () => {
  const p = primary();
  const m = new Harness();
  try {
    const [first, second] = blocksOf(p.ledger);
    const refused = (b: AssembledBlock, why: RegExp) => {
      const head = m.ledger.headRef();
      assert.throws(
        () => m.ledger.importBlock(b.block, b.txs),
        (e: unknown) => e instanceof BlockImportError && why.test(e.message),
      );
      assert.deepEqual(m.ledger.headRef(), head);
      assert.equal(m.ledger.finalizedFeedSeq(), head.number === 0 ? 0 : 2);
    };
    refused(second!, /does not extend/);
    const badHash = { ...first!, block: { ...first!.block, hash: new Uint8Array(32) } };
    refused(badHash, /does not hash/);
    // a signature byte flipped: the extrinsics root no longer matches…
    const bytes = Uint8Array.from(first!.txs[0]!.bytes);
    bytes[bytes.length - 5]! ^= 1;
    const flipped = { ...first!, txs: [{ ...first!.txs[0]!, bytes }, first!.txs[1]!] };
    refused(flipped, /extrinsics root/);
    // …and with a header rebuilt around it, executing it fails the signature check, so the results differ
    const header = { ...first!.block.header, extrinsicsRoot: extrinsicsRoot(flipped.txs.map((t) => txHashOf(t.bytes))) };
    refused({ ...flipped, block: { header, hash: blockHash(header) } }, /other outcomes/);
    m.ledger.importBlock(first!.block, first!.txs);
    m.ledger.importBlock(second!.block, second!.txs);
    assert.equal(m.ledger.headRef().hash, to0x(second!.block.hash));
  } finally {
    p.close();
    m.close();
  }
});

test('a ledger from before the feed gets its feed numbered from its blocks, with the payloads its transactions kept', () => {
  const p = primary();
  try {
    const before = p.ledger.finalizedFeed(0, 1000);
    const tally = p.ledger.finalizedFeedTally();
    // as a database written before the feed existed: no feed rows nor tally, no migration recorded
    const db = (p as unknown as { db: SqliteDb }).db;
    db.exec(
      "DROP TABLE ledger_feed; DROP TABLE ledger_feed_tally; DROP TABLE ledger_feed_personas; DELETE FROM schema_migrations WHERE namespace = 'ledger-feed'",
    );
    const reopened = p.reopen();
    const after = reopened.finalizedFeed(0, 1000);
    assert.deepEqual(
      after.map((e) => [e.seq, e.blockNumber, e.tx?.txHash]),
      before.map((e) => [e.seq, e.blockNumber, e.tx?.txHash]),
    );
    assert.deepEqual(
      after.map((e) => e.tx?.bytes),
      before.map((e) => e.tx?.bytes),
    );
    assert.ok(after.some((e) => e.tx?.bytes !== undefined));
    assert.equal(reopened.finalizedFeedSeq(), 4);
    assert.deepEqual(reopened.finalizedFeedTally(), tally, 'the tally computed from the numbered feed');
  } finally {
    p.close();
  }
});
