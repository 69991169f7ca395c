/**
 * `--ledger substrate` on the ledger side: Directories (a Ledger each, its own SQLite file) following one chain
 * through the ChainClient interface — here an in-memory chain, for exact control of strangers' remarks, stalls,
 * outages and funds. test/chain/substrate-network.test.ts runs the same rules on the real runtime.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import { to0x, utf8 } from '../../src/base/bytes.js';
import { ManualClock } from '../../src/base/clock.js';
import { NetworkDefinitionError, networkGenesis, type NetworkDefinition } from '../../src/chain/network-definition.js';
import { startChainOrdering, type ChainOrdering } from '../../src/chain/substrate-ordering.js';
import { ScaleWriter } from '../../src/codec/scale.js';
import { ANCHOR_MAGIC, encodeAnchorBatch, type AnchoredTx } from '../../src/ledger/anchor-batch.js';
import { Ledger } from '../../src/ledger/chain.js';
import { LedgerFailure } from '../../src/ledger/errors.js';
import { encodeExtrinsic, type Call } from '../../src/ledger/extrinsic.js';
import { getDidRecord } from '../../src/ledger/records.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { openSqlite, type SqliteDb } from '../../src/store/sqlite/database.js';
import { LEDGER_MIGRATIONS, SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';
import { aliasCall, attestor, didOf, metaOf, registerCall, rootSigner, seedKey, T0 } from '../ledger/harness.js';
import { MemoryChain, type MemoryChainClient } from '../support/memory-chain.js';
import { waitFor } from '../support/wait.js';

const silent = pino({ level: 'silent' });

function networkOf(chain: MemoryChain, networkId = 'net-a'): NetworkDefinition {
  const start = chain.blocks[1]!;
  return {
    networkId,
    profile: 'platform',
    personaAttestors: [attestor.publicKey],
    chain: { genesisHash: chain.genesisHash, start: { number: start.number, hash: start.hash, timestampMs: start.timestampMs } },
  };
}

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** One Directory's ledger following the chain (its own SQLite file); `restart()` reopens the same file. */
class Follower {
  ledger!: Ledger;
  ordering!: ChainOrdering;
  client!: MemoryChainClient;
  private db!: SqliteDb;
  readonly path: string;
  readonly clock = new ManualClock(T0 + 1_000);

  constructor(
    readonly chain: MemoryChain,
    readonly network: NetworkDefinition,
    readonly account: string,
    dir = mkdtempSync(join(tmpdir(), 'ddn-chain-')),
  ) {
    dirs.push(dir);
    this.path = join(dir, 'ledger.sqlite');
  }

  async start(balance?: bigint): Promise<this> {
    this.db = openSqlite(this.path, LEDGER_MIGRATIONS, 'ledger');
    this.ledger = new Ledger(new SqliteLedgerStore(this.db), {
      profile: PLATFORM,
      genesis: networkGenesis(this.network),
      blockIntervalMs: 1,
      finalityDepth: 0,
      clock: this.clock,
      autoProduce: false,
      ordering: 'chain',
    });
    this.client = this.chain.client(this.account, balance);
    this.ordering = await startChainOrdering({ client: this.client, ledger: this.ledger, network: this.network, logger: silent, submitter: { pollMs: 5 } });
    return this;
  }

  /** A crash: the process is gone, its database closed where it stood (nothing flushed beyond what was committed). */
  async crash(): Promise<void> {
    await this.ordering.close();
    this.db.close();
  }

  async admit(call: Call): Promise<string> {
    return (await this.ledger.admit(call, metaOf(call))).txHash;
  }

  /** Waits until every finalized chain block is applied. */
  async synced(): Promise<void> {
    await waitFor('the follower applies the chain head', async () => (this.ordering.status().applied.number >= this.chain.head.number ? true : undefined));
  }

  async finished(txHash: string): Promise<NonNullable<ReturnType<Ledger['txView']>>> {
    return waitFor(`${txHash} ordered by the chain`, async () => {
      const v = this.ledger.txView(txHash);
      return v !== undefined && v.status !== 'pending' ? v : undefined;
    });
  }
}

/** Every ddn block of a ledger: number, hash, and its transactions' hashes and outcomes. */
function blocksOf(l: Ledger) {
  const out = [];
  for (let n = 0; n <= l.headNumber; n++) {
    const b = l.block(n)!;
    out.push({ n, hash: to0x(b.block.hash), txs: b.txs.map((t) => [t.txHash, t.status, t.error?.name ?? '', t.submittedAtMs, t.meta.subject]) });
  }
  return out;
}

const register = (n: number, alias: string | null = null) => registerCall(didOf(n), seedKey(n), { alias });

describe('Directories following one chain', () => {
  it('converge: the same blocks, hashes, outcomes and records, whoever accepted a change', async () => {
    const chain = new MemoryChain();
    const network = networkOf(chain);
    const a = await new Follower(chain, network, 'alice').start();
    const b = await new Follower(chain, network, 'bob').start();
    const t1 = await a.admit(register(1));
    const t2 = await b.admit(register(2));
    const t3 = await a.admit(register(3));
    assert.equal(a.ledger.txView(t1)?.status, 'pending');
    for (const f of [a, b]) for (const t of [t1, t2, t3]) assert.equal((await f.finished(t)).status, 'finalized');
    await a.synced();
    await b.synced();
    assert.deepEqual(blocksOf(a.ledger), blocksOf(b.ledger));
    assert.equal(a.ledger.headRef().hash, b.ledger.headRef().hash);
    assert.ok(a.ledger.headNumber >= 2, 'the changes are in ddn blocks');
    for (const n of [1, 2, 3]) assert.deepEqual(getDidRecord(a.ledger.finalizedView(), didOf(n)), getDidRecord(b.ledger.finalizedView(), didOf(n)));
    assert.ok(getDidRecord(b.ledger.finalizedView(), didOf(1)), 'a DID accepted by A resolves on B');
    // the block's time is the chain block's, never a local clock
    const tx1 = b.ledger.txView(t1)!;
    assert.ok(tx1.status === 'finalized' && chain.blocks.some((cb) => cb.timestampMs === tx1.block?.timestampMs));
    // a third Directory started later syncs from the chain alone
    const c = await new Follower(chain, network, 'carol').start();
    await c.synced();
    assert.deepEqual(blocksOf(c.ledger), blocksOf(a.ledger));
    for (const f of [a, b, c]) await f.crash();
  });

  it('decides a conflict by chain order: an alias claimed through two Directories is won by one DID on both', async () => {
    const chain = new MemoryChain();
    const network = networkOf(chain);
    const a = await new Follower(chain, network, 'alice').start();
    const b = await new Follower(chain, network, 'bob').start();
    // registrations naming one alias (ledger-rules §5.5: the later one registers without it)
    const [ra, rb] = await Promise.all([a.admit(register(11, 'shared')), b.admit(register(12, 'shared'))]);
    for (const f of [a, b]) for (const t of [ra, rb]) assert.equal((await f.finished(t)).status, 'finalized');
    // add_alias of one alias through both Directories: each pool alone sees it free
    const k13 = seedKey(13);
    const k14 = seedKey(14);
    await Promise.all([a.finished(await a.admit(registerCall(didOf(13), k13))), b.finished(await b.admit(registerCall(didOf(14), k14)))]);
    const [ta, tb] = await Promise.all([
      a.admit(aliasCall(didOf(13), { kind: 'add', alias: 'contested' }, rootSigner(k13), { nonce: 0n })),
      b.admit(aliasCall(didOf(14), { kind: 'add', alias: 'contested' }, rootSigner(k14), { nonce: 0n })),
    ]);
    const outcomes = await Promise.all([a.finished(ta), a.finished(tb), b.finished(ta), b.finished(tb)]);
    const [aa, ab, ba, bb] = outcomes.map((v) => [v.status, v.tx.error?.name ?? null]);
    assert.deepEqual([aa, ab], [ba, bb], 'both Directories record the same outcomes');
    assert.deepEqual([aa, ab].map((o) => o![0]).sort(), ['failed', 'finalized'], 'exactly one claim wins');
    assert.ok(
      [aa, ab].some((o) => o![1] === 'AliasTaken'),
      'the later claim fails with AliasTaken',
    );
    for (const f of [a, b]) await f.synced();
    for (const [alias, dids] of [
      ['shared', [didOf(11), didOf(12)]],
      ['contested', [didOf(13), didOf(14)]],
    ] as const) {
      const holders = (f: Follower) => dids.filter((d) => getDidRecord(f.ledger.finalizedView(), d)?.aliases?.includes(alias));
      assert.equal(holders(a).length, 1, `one DID holds ${alias}`);
      assert.deepEqual(holders(a), holders(b), `the same DID holds ${alias} on both`);
    }
    assert.equal(a.ledger.headRef().hash, b.ledger.headRef().hash);
    for (const f of [a, b]) await f.crash();
  });

  it("skips strangers' garbage, other networks and repeated batches deterministically, and applies a stranger's valid batch", async () => {
    const chain = new MemoryChain();
    const network = networkOf(chain);
    const a = await new Follower(chain, network, 'alice').start();
    const valid = register(21);
    const item: AnchoredTx = { submittedAtMs: T0 + 5, meta: metaOf(valid), bytes: encodeExtrinsic(valid) };
    const good = encodeAnchorBatch({ networkId: network.networkId, items: [item] });
    const tooMany = new ScaleWriter().raw(ANCHOR_MAGIC).str(network.networkId).compact(1001).finish();
    const garbage = [
      utf8('hello, chain'),
      Uint8Array.of(...ANCHOR_MAGIC, 0xff, 0xff),
      good.slice(0, good.length - 3), // truncated
      Uint8Array.of(...good, 0), // trailing byte
      tooMany, // announces more items than a batch may hold
      encodeAnchorBatch({ networkId: 'another-net', items: [item] }),
      encodeAnchorBatch({ networkId: network.networkId, items: [{ ...item, bytes: Uint8Array.of(8, 99, 1, 2) }] }), // not an extrinsic
    ];
    const before = a.ledger.headNumber;
    chain.produce(garbage.map((data) => ({ signer: 'mallory', data })));
    await a.synced();
    assert.equal(a.ledger.headNumber, before, 'no ddn block for remarks that carry nothing valid');
    // the valid batch posted twice by a stranger, and once more in a later block: applied once
    chain.produce([
      { signer: 'mallory', data: good },
      { signer: 'mallory', data: good },
    ]);
    chain.produce([{ signer: 'mallory', data: good }]);
    await a.synced();
    assert.equal(a.ledger.headNumber, before + 1);
    const txs = a.ledger.block(before + 1)!.txs;
    assert.equal(txs.length, 1);
    assert.equal(txs[0]!.status, 'included');
    assert.equal(txs[0]!.submittedAtMs, T0 + 5, "the batch's admission time is kept");
    assert.ok(getDidRecord(a.ledger.finalizedView(), didOf(21)));
    // a Directory following later computes exactly the same
    const b = await new Follower(chain, network, 'bob').start();
    await b.synced();
    assert.deepEqual(blocksOf(b.ledger), blocksOf(a.ledger));
    for (const f of [a, b]) await f.crash();
  });

  it('never loses a 202 and never applies one twice across a crash with a batch in flight', async () => {
    const chain = new MemoryChain();
    const network = networkOf(chain);
    const a = new Follower(chain, network, 'alice');
    await a.start();
    chain.stalled = true; // the chain takes the remark but does not finalize it yet
    const t1 = await a.admit(register(31));
    const t2 = await a.admit(register(32));
    await waitFor('a batch is in flight', async () => (a.client.submitted.length > 0 ? true : undefined));
    await a.crash();
    // restart on the same data directory: the accepted changes are still waiting, and are submitted again
    await a.start();
    assert.equal(a.ledger.txView(t1)?.status, 'pending');
    assert.equal(a.ledger.awaitingOrder().length, 2);
    await waitFor('the restarted Directory submits them again', async () => (a.client.submitted.length > 0 ? true : undefined));
    chain.resume(); // both submissions finalize: the same changes are now on the chain twice
    for (const t of [t1, t2]) assert.equal((await a.finished(t)).status, 'finalized');
    await waitFor('both batches are on the chain', async () =>
      chain.head.remarks.length > 0 && chain.blocks.filter((b) => b.remarks.length > 0).length >= 2 ? true : undefined,
    );
    await a.synced();
    const occurrences = blocksOf(a.ledger).flatMap((b) => b.txs.map((t) => t[0]));
    assert.equal(occurrences.filter((h) => h === t1).length, 1, 'applied exactly once');
    assert.equal(occurrences.filter((h) => h === t2).length, 1, 'applied exactly once');
    await a.crash();
  });

  it('a closed ordering keeps no timer of the batch it had in flight (the process can end)', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const chain = new MemoryChain();
    const a = await new Follower(chain, networkOf(chain), 'alice').start();
    chain.stalled = true; // the submission never returns
    await a.admit(register(71));
    await waitFor('a batch is in flight', async () => (a.client.submitted.length > 0 ? true : undefined));
    await a.crash();
    assert.equal(timers(), before, 'no timer of the closed ordering is left');
  });

  it('an account out of funds: a typed refusal, nothing lost, submitted once funded', async () => {
    const chain = new MemoryChain();
    const network = networkOf(chain);
    const a = await new Follower(chain, network, 'alice').start(0n);
    const t = await a.admit(register(41));
    await waitFor('the refusal is counted', async () => (a.ordering.status().submitter.failures.insufficient_funds > 0 ? true : undefined));
    assert.equal(a.ordering.status().submitter.lastFailure?.kind, 'insufficient_funds');
    assert.equal(a.ledger.txView(t)?.status, 'pending');
    assert.equal(a.ledger.awaitingOrder().length, 1);
    chain.balances.set('alice', 1_000n);
    assert.equal((await a.finished(t)).status, 'finalized');
    assert.ok(a.ordering.status().submitter.feesPaid > 0n);
    await a.crash();
  });

  it('a chain that goes away: writes refused with OrderUnavailable, reads keep working, writes again once it is back', async () => {
    const chain = new MemoryChain();
    const network = networkOf(chain);
    const a = await new Follower(chain, network, 'alice').start();
    const t = await a.admit(register(51));
    await a.finished(t);
    chain.down = true;
    a.client.announceConnection();
    await assert.rejects(a.admit(register(52)), (e: unknown) => e instanceof LedgerFailure && e.errorName === 'OrderUnavailable');
    assert.ok(getDidRecord(a.ledger.finalizedView(), didOf(51)), 'reads serve the last applied state');
    chain.down = false;
    a.client.announceConnection();
    const t2 = await a.admit(register(52));
    assert.equal((await a.finished(t2)).status, 'finalized');
    await a.crash();
  });

  it('a change that no longer passes on the head is not dropped locally: the chain decides it, the same everywhere', async () => {
    const chain = new MemoryChain();
    const network = networkOf(chain);
    const a = await new Follower(chain, network, 'alice').start();
    const b = await new Follower(chain, network, 'bob').start();
    const [k1, k2] = [seedKey(61), seedKey(62)];
    await Promise.all([a.finished(await a.admit(registerCall(didOf(61), k1))), b.finished(await b.admit(registerCall(didOf(62), k2)))]);
    await a.synced();
    await b.synced();
    chain.stalled = true;
    const tb = await b.admit(aliasCall(didOf(62), { kind: 'add', alias: 'late' }, rootSigner(k2), { nonce: 0n }));
    await waitFor("B's claim is in flight first", async () => (b.client.submitted.length >= 2 ? true : undefined));
    const ta = await a.admit(aliasCall(didOf(61), { kind: 'add', alias: 'late' }, rootSigner(k1), { nonce: 0n }));
    await waitFor("A's claim is in flight", async () => (a.client.submitted.length >= 2 ? true : undefined));
    chain.resume(); // B's block first: A's pending claim then fails on A's head, but A's batch is already on its way
    const onA = await a.finished(ta);
    const onB = await b.finished(ta);
    assert.equal(onA.status, 'failed');
    assert.equal(onA.tx.error?.name, 'AliasTaken');
    assert.ok(onA.status === 'failed' && onA.block !== undefined, 'failed in a block, not dropped by one pool');
    assert.deepEqual([onB.status, onB.tx.error?.name, onB.tx.blockNumber], [onA.status, onA.tx.error?.name, onA.tx.blockNumber]);
    assert.equal((await a.finished(tb)).status, 'finalized');
    await a.synced();
    await b.synced();
    assert.deepEqual(blocksOf(a.ledger), blocksOf(b.ledger));
    for (const f of [a, b]) await f.crash();
  });

  it('refuses a chain that is not the network file’s', async () => {
    const chain = new MemoryChain();
    const other = new MemoryChain(T0, 'other');
    const f = new Follower(other, networkOf(chain), 'alice');
    await assert.rejects(f.start(), (e: unknown) => e instanceof NetworkDefinitionError && /start block/.test(e.message));
  });
});
