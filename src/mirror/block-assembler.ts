/**
 * Gathers export feed lines (src/ledger/feed.ts) into whole blocks for a follower: a block is complete once it has
 * as many lines as its `extrinsic_count` says (one line for a block without extrinsics). Pure; throws
 * {@link FeedFormatError} on a line that does not continue the stream.
 */
import { bytesEqual } from '../base/bytes.js';
import type { ImportedTx } from '../ledger/chain.js';
import { FeedFormatError, type FeedLine } from '../ledger/feed.js';
import type { StoredBlock } from '../ledger/store.js';

/** A complete block, with the seq of its last line. */
export interface AssembledBlock {
  block: StoredBlock;
  txs: ImportedTx[];
  /** What the producer says each extrinsic's outcome was (checked again by the import's results root). */
  success: boolean[];
  lastSeq: number;
}

export class BlockAssembler {
  private current: { block: StoredBlock; count: number; txs: ImportedTx[]; success: boolean[] } | undefined;

  /** `afterSeq`: the seq of the last line already applied (lines at or below it are skipped). */
  constructor(private afterSeq: number) {}

  /** Takes one line; returns the block it completes, if any. */
  push(line: FeedLine): AssembledBlock | undefined {
    if (line.seq <= this.afterSeq) return undefined;
    this.afterSeq = line.seq;
    const n = line.block.header.number;
    if (this.current !== undefined && (this.current.block.header.number !== n || !bytesEqual(this.current.block.hash, line.block.hash))) {
      throw new FeedFormatError(`block ${this.current.block.header.number} ended after ${this.current.txs.length} of its ${this.current.count} extrinsics`);
    }
    this.current ??= { block: line.block, count: line.extrinsicCount, txs: [], success: [] };
    const cur = this.current;
    if (line.tx !== undefined) {
      if (line.tx.index !== cur.txs.length) throw new FeedFormatError(`block ${n}: extrinsic ${line.tx.index} arrived where ${cur.txs.length} was due`);
      if (line.tx.bytes === undefined) {
        throw new FeedFormatError(`block ${n} was committed before the Directory kept extrinsic bytes; it cannot be verified`);
      }
      cur.txs.push({ bytes: line.tx.bytes, meta: line.tx.meta, submittedAtMs: line.tx.submittedAtMs });
      cur.success.push(line.tx.success);
    } else if (cur.count !== 0) {
      throw new FeedFormatError(`block ${n}: a line without an extrinsic in a block of ${cur.count}`);
    }
    if (cur.txs.length < cur.count) return undefined;
    this.current = undefined;
    return { block: cur.block, txs: cur.txs, success: cur.success, lastSeq: line.seq };
  }
}
