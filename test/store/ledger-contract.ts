/**
 * The ledger's contract as the Directory relies on it, for any backend: a change admitted at one node is pending
 * at every node, an identical resubmission anywhere is a duplicate with the same hash, a conflicting one is
 * refused, blocks include it with the same hash everywhere, and pending changes and blocks survive a restart.
 * SQLite runs it on one node (admitting and reading node are the same); PostgreSQL on two processes' worth of
 * ledgers sharing one schema.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Ledger } from '../../src/ledger/chain.js';
import { LedgerFailure } from '../../src/ledger/errors.js';
import { getDidRecord, getNonce } from '../../src/ledger/records.js';
import { makeProfile, type Profile } from '../../src/protocol/profile.js';
import { aliasCall, controlCall, didOf, metaOf, registerCall, rootSigner, seedKey } from '../ledger/harness.js';

export interface ContractNode {
  readonly ledger: Ledger;
}

/** Nodes of one deployment; `nodes[0]` admits, the last one reads (the same node on a single-node backend). */
export interface ContractCluster {
  readonly nodes: readonly ContractNode[];
  /** Until every pending change is in a block and every node sees the same head. */
  settle(): Promise<void>;
  /** Until every node has seen every admission (no blocks produced meanwhile on manual backends). */
  sync(): Promise<void>;
  /** Closes every node and opens them again on the same data. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** A cluster of profile `platform` unless another is asked for. */
export type OpenCluster = (o?: { profile?: Profile }) => Promise<ContractCluster>;

export function ledgerContract(name: string, open: OpenCluster): void {
  const key = seedKey(21);
  const did = didOf(601);

  describe(`ledger contract (${name})`, () => {
    it('admits once, answers duplicates with the same hash everywhere, refuses a conflicting change while pending', async () => {
      const c = await open();
      try {
        const first = c.nodes[0]!.ledger;
        const last = c.nodes[c.nodes.length - 1]!.ledger;
        const call = registerCall(did, key);
        const admitted = await first.admit(call, metaOf(call));
        assert.equal(admitted.duplicate, false);
        await c.sync();
        assert.equal(last.txView(admitted.txHash)?.status, 'pending');
        const again = await last.admit(call, metaOf(call));
        assert.deepEqual(again, { txHash: admitted.txHash, duplicate: true });
        const other = registerCall(did, key, { alias: 'someone-else' });
        await assert.rejects(last.admit(other, metaOf(other)), (e: unknown) => e instanceof LedgerFailure);
        assert.equal(last.pendingEntries().length, 1, 'the refused change left nothing behind');
      } finally {
        await c.close();
      }
    });

    it('includes admitted changes in one chain that every node reads alike', async () => {
      const c = await open();
      try {
        const hashes: string[] = [];
        for (let i = 0; i < 3; i++) {
          const call = registerCall(didOf(610 + i), seedKey(30 + i));
          hashes.push((await c.nodes[i % c.nodes.length]!.ledger.admit(call, metaOf(call))).txHash);
        }
        await c.settle();
        const heads = c.nodes.map((n) => n.ledger.headRef());
        assert.ok(heads[0]!.number >= 1);
        for (const h of heads) assert.deepEqual(h, heads[0], 'every node has the same head');
        for (const n of c.nodes) {
          for (const h of hashes) assert.equal(n.ledger.txView(h)?.status, 'finalized');
          for (let i = 0; i < 3; i++) assert.ok(getDidRecord(n.ledger.finalizedView(), didOf(610 + i)), 'the DID reads back');
          for (let b = 1; b <= heads[0]!.number; b++) {
            assert.deepEqual(n.ledger.block(b)?.block.hash, c.nodes[0]!.ledger.block(b)?.block.hash, `block ${b}`);
          }
        }
      } finally {
        await c.close();
      }
    });

    it('tells every node the state keys of the blocks it applied, produced there or elsewhere (what a resolve cache drops)', async () => {
      const c = await open();
      try {
        const reads = c.nodes.map((n) => n.ledger.finalizedRefNow().number);
        const call = registerCall(didOf(620), seedKey(40), { alias: 'touched620' });
        await c.nodes[0]!.ledger.admit(call, metaOf(call));
        await c.settle();
        for (const [i, n] of c.nodes.entries()) {
          const touched = n.ledger.touchedKeys(reads[i]!, n.ledger.finalizedRefNow().number);
          assert.ok(touched, `node ${i} knows the keys of the blocks since it last read`);
          assert.ok(touched.has(`did/${didOf(620)}`), `node ${i}: the DID's record`);
          assert.ok(touched.has('alias/touched620'), `node ${i}: its alias`);
          assert.ok(!touched.has(`did/${didOf(621)}`));
        }
        await c.restart();
        const n = c.nodes[0]!.ledger;
        const head = n.finalizedRefNow().number;
        assert.equal(n.touchedKeys(0, head), undefined, 'blocks committed before a start are not known: a cache drops everything');
        assert.deepEqual([...n.touchedKeys(head, head)!], []);
      } finally {
        await c.close();
      }
    });

    it('keeps pending changes and blocks across a restart', async () => {
      const c = await open();
      try {
        const one = registerCall(didOf(620), seedKey(40));
        await c.nodes[0]!.ledger.admit(one, metaOf(one));
        await c.settle();
        const block1 = c.nodes[0]!.ledger.block(1)!.block.hash;
        const two = registerCall(didOf(621), seedKey(41));
        const pending = await c.nodes[0]!.ledger.admit(two, metaOf(two));
        await c.sync();
        await c.restart();
        const last = c.nodes[c.nodes.length - 1]!.ledger;
        assert.deepEqual(last.block(1)?.block.hash, block1);
        assert.equal(last.txView(pending.txHash)?.status, 'pending');
        await c.settle();
        for (const n of c.nodes) assert.equal(n.ledger.txView(pending.txHash)?.status, 'finalized');
      } finally {
        await c.close();
      }
    });

    it('keeps a deleted DID deleted across a restart (profile platform)', async () => {
      const c = await open();
      try {
        const gone = didOf(630);
        const k = seedKey(42);
        const reg = registerCall(gone, k);
        await c.nodes[0]!.ledger.admit(reg, metaOf(reg));
        await c.settle();
        const del = controlCall(gone, { kind: 'DeleteDid' }, rootSigner(k), { nonce: 0n });
        await c.nodes[0]!.ledger.admit(del, metaOf(del));
        await c.settle();
        await c.restart();
        const again = registerCall(gone, seedKey(43));
        for (const n of c.nodes) {
          await assert.rejects(n.ledger.admit(again, metaOf(again)), (e: unknown) => e instanceof LedgerFailure && e.errorName === 'DidDeleted');
        }
      } finally {
        await c.close();
      }
    });

    it("reads a DID's history with every registration in place: before and after a deletion, a page at a time (profile openpayload)", async () => {
      const profile = makeProfile('openpayload');
      const c = await open({ profile });
      try {
        const did = didOf(641);
        const k = seedKey(45);
        const hashes: string[] = [];
        const admit = async (call: Parameters<Ledger['admit']>[0]) => {
          hashes.push((await c.nodes[0]!.ledger.admit(call, metaOf(call))).txHash);
          await c.settle();
        };
        const history = (o: { limit?: number; before?: { blockNumber: number; blockIndex: number }; extrinsics?: string[]; maxBlock?: number } = {}) => {
          const last = c.nodes[c.nodes.length - 1]!.ledger;
          return last.subjectHistory({ subject: did, maxBlock: o.maxBlock ?? last.finalizedRefNow().number, limit: o.limit ?? 10, ...o });
        };
        await admit(registerCall(did, k, { profile }));
        assert.deepEqual(
          history().map((t) => t.txHash),
          [hashes[0]],
          'a registration its record names is in the history',
        );
        await admit(aliasCall(did, { kind: 'add', alias: 'first-life' }, rootSigner(k), { nonce: 0n }));
        await admit(controlCall(did, { kind: 'DeleteDid' }, rootSigner(k), { nonce: 0n }));
        assert.deepEqual(
          history().map((t) => t.txHash),
          [...hashes].reverse(),
          'still there once the record is deleted',
        );
        const beforeAgain = c.nodes[0]!.ledger.finalizedRefNow().number;
        await c.restart();
        await admit(registerCall(did, k, { profile }));
        const nonce = getNonce(c.nodes[0]!.ledger.finalizedView(), 'alias_nonce', did);
        await admit(aliasCall(did, { kind: 'add', alias: 'second-life' }, rootSigner(k), { nonce }));
        const newestFirst = [...hashes].reverse();
        assert.deepEqual(
          history().map((t) => t.txHash),
          newestFirst,
        );
        // a page at a time, through each registration
        const paged: string[] = [];
        let before: { blockNumber: number; blockIndex: number } | undefined;
        for (;;) {
          const [row] = history({ limit: 1, ...(before === undefined ? {} : { before }) });
          if (row === undefined) break;
          paged.push(row.txHash);
          before = { blockNumber: row.blockNumber!, blockIndex: row.blockIndex! };
        }
        assert.deepEqual(paged, newestFirst);
        assert.deepEqual(
          history({ extrinsics: ['register_with_proof_v2'] }).map((t) => t.txHash),
          [hashes[3], hashes[0]],
          'only the registrations',
        );
        assert.deepEqual(
          history({ maxBlock: beforeAgain }).map((t) => t.txHash),
          newestFirst.slice(2),
          'as of a block before the registration again',
        );
        assert.deepEqual(
          history({ extrinsics: ['add_alias'], limit: 1 }).map((t) => t.txHash),
          [hashes[4]],
        );
      } finally {
        await c.close();
      }
    });

    it('refuses a payload signed before a deletion after the DID is registered again, also across a restart (profile openpayload)', async () => {
      const profile = makeProfile('openpayload');
      const c = await open({ profile });
      try {
        const did = didOf(631);
        const k = seedKey(44);
        const admit = async (call: Parameters<Ledger['admit']>[0]) => {
          await c.nodes[0]!.ledger.admit(call, metaOf(call));
          await c.settle();
        };
        await admit(registerCall(did, k, { profile }));
        const captured = aliasCall(did, { kind: 'add', alias: 'before' }, rootSigner(k), { nonce: 0n });
        await admit(captured);
        await admit(controlCall(did, { kind: 'DeleteDid' }, rootSigner(k), { nonce: 0n }));
        await c.restart();
        await admit(registerCall(did, k, { profile }));
        const last = c.nodes[c.nodes.length - 1]!.ledger;
        assert.ok(getDidRecord(last.finalizedView(), did), 'registered again');
        await assert.rejects(last.admit(captured, metaOf(captured)), (e: unknown) => e instanceof LedgerFailure && e.errorName === 'InvalidAliasNonce');
        await c.restart();
        await assert.rejects(
          c.nodes[0]!.ledger.admit(captured, metaOf(captured)),
          (e: unknown) => e instanceof LedgerFailure && e.errorName === 'InvalidAliasNonce',
        );
      } finally {
        await c.close();
      }
    });
  });
}
