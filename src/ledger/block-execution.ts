/**
 * A block executed on its parent (ledger-rules.md §2): the next block out of a list of entries — its header, state
 * writes and the outcome of each extrinsic — and a block another ledger made, verified by executing it again.
 */
import { to0x, bytesEqual } from '../base/bytes.js';
import { blockHash, extrinsicsRoot, resultsRoot, type BlockHeader } from './block.js';
import { BlockImportError, LedgerFailure } from './errors.js';
import type { Executor } from './executor.js';
import { decodeExtrinsic, txHashOf } from './extrinsic.js';
import { Overlay, type StateReader, type StateValue } from './state.js';
import type { StoredBlock, TxRecord } from './store.js';
import { Recalled } from './pool-effects.js';
import { failureToTxError } from './tx-outcome.js';
import type { BlockRef, ImportedTx, PoolEntry } from './types.js';

/** A block executed and not yet stored; `overlay`: its state writes over its parent's state. */
export interface ExecutedBlock {
  readonly block: StoredBlock;
  readonly writes: Map<string, StateValue | undefined>;
  readonly records: TxRecord[];
  readonly overlay: Overlay;
}

/**
 * The block after `parent` holding `entries` in order at `timestampMs`: header, state writes, outcomes.
 *
 * `entries` are the pool's first (or entries without recorded effects): an entry's effects were recorded on the
 * pool state over `parentState` after the entries before it, so a key it read then that neither the block so far
 * nor those entries' pool runs wrote has the same value here — it is read from its effects ({@link Recalled}), not
 * from the parent state (the store, when the parent's memo no longer holds it). After an entry without effects,
 * every read goes to the state.
 */
export function executeBlock(exec: Executor, parent: BlockRef, parentState: StateReader, entries: readonly PoolEntry[], timestampMs: number): ExecutedBlock {
  const number = parent.number + 1;
  const overlay = new Overlay(parentState);
  /** What the pool runs of the entries so far wrote; null after one without recorded effects. */
  let poolWrote: Set<string> | null = new Set<string>();
  const results = entries.map((e) => {
    const ctx = exec.ctx(timestampMs, number, e.tx.txHash, false, e.verified);
    const before = e.effects;
    if (before === undefined || poolWrote === null) {
      poolWrote = null;
      return { entry: e, failure: exec.apply(overlay, ctx, e.call) };
    }
    const wrote = poolWrote;
    const failure = exec.apply(overlay, ctx, e.call, new Recalled(overlay, before.reads, (k) => overlay.wrote(k) || wrote.has(k)));
    for (const k of before.writes.keys()) wrote.add(k);
    return { entry: e, failure };
  });
  const txHashes = entries.map((e) => txHashOf(e.bytes));
  const header: BlockHeader = {
    parentHash: Buffer.from(parent.hash.slice(2), 'hex'),
    number,
    timestampMs,
    extrinsicsRoot: extrinsicsRoot(txHashes),
    resultsRoot: resultsRoot(results.map((r, i) => ({ txHash: txHashes[i]!, success: !r.failure, error: r.failure?.errorName ?? '' }))),
  };
  const block: StoredBlock = { header, hash: blockHash(header) };
  const records: TxRecord[] = results.map((r, i) => {
    const rec: TxRecord = {
      ...r.entry.tx,
      status: r.failure ? 'failed' : 'included',
      blockNumber: number,
      blockIndex: i,
      finishedAtMs: timestampMs,
      // the extrinsic stays with its block: the export feed serves it (docs/mirrors.md)
      bytes: r.entry.bytes,
    };
    if (r.failure) rec.error = failureToTxError(r.failure);
    return rec;
  });
  return { block, writes: overlay.changes(), records, overlay };
}

/**
 * `block`, made by another ledger on `parent`, with its extrinsics `txs`, executed here: the extrinsics root, every
 * outcome (results root, signatures checked by the runtime) and the block hash must come out as `block` says.
 * Its state writes and records; throws {@link BlockImportError} when anything differs.
 */
export function verifyBlock(
  exec: Executor,
  parent: BlockRef,
  parentState: StateReader,
  block: StoredBlock,
  txs: readonly ImportedTx[],
): { writes: Map<string, StateValue | undefined>; records: TxRecord[] } {
  const h = block.header;
  if (h.number !== parent.number + 1 || to0x(h.parentHash) !== parent.hash) {
    throw new BlockImportError(`block ${h.number} does not extend the local head ${parent.number} (${parent.hash})`);
  }
  if (!bytesEqual(blockHash(h), block.hash)) throw new BlockImportError(`block ${h.number}: the header does not hash to its hash`);
  const txHashes = txs.map((t) => txHashOf(t.bytes));
  if (!bytesEqual(extrinsicsRoot(txHashes), h.extrinsicsRoot)) {
    throw new BlockImportError(`block ${h.number}: its extrinsics do not match its extrinsics root`);
  }
  const overlay = new Overlay(parentState);
  const records = txs.map((t, i): TxRecord => {
    const txHash = to0x(txHashes[i]!);
    const call = decodeExtrinsic(t.bytes);
    const failure = call ? exec.apply(overlay, exec.ctx(h.timestampMs, h.number, txHash), call) : new LedgerFailure('MalformedExtrinsic', 'Ledger');
    const rec: TxRecord = {
      txHash,
      extrinsic: call?.name ?? 'malformed',
      status: failure ? 'failed' : 'included',
      submittedAtMs: t.submittedAtMs,
      meta: t.meta,
      bytes: t.bytes,
      blockNumber: h.number,
      blockIndex: i,
      finishedAtMs: h.timestampMs,
    };
    if (failure) rec.error = failureToTxError(failure);
    return rec;
  });
  const results = records.map((r, i) => ({ txHash: txHashes[i]!, success: r.status === 'included', error: r.error?.name ?? '' }));
  if (!bytesEqual(resultsRoot(results), h.resultsRoot)) {
    throw new BlockImportError(`block ${h.number}: executing its extrinsics gives other outcomes than its results root`);
  }
  return { writes: overlay.changes(), records };
}
