/**
 * Gathers export feed lines (src/ledger/feed.ts) into whole blocks for a follower: a block is complete once it has
 * as many lines as its `extrinsic_count` says (one line for a block without extrinsics). Pure. A block larger than
 * the bounds — more extrinsics than a block may hold, more line bytes than {@link BlockBounds.maxBlockBytes} — does
 * not verify ({@link BlockImportError}), and so does one whose bytes were not kept; a line that does not continue
 * the stream is a {@link FeedFormatError}.
 */
import { bytesEqual } from '../base/bytes.js';
import { BlockImportError } from '../ledger/errors.js';
import { MAX_EXTRINSICS_PER_BLOCK, type ImportedTx } from '../ledger/types.js';
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

/** How large a block may be: what a follower holds in memory while it gathers one. */
export interface BlockBounds {
  /** Extrinsics of one block (a Directory makes blocks of at most {@link MAX_EXTRINSICS_PER_BLOCK}). */
  maxExtrinsics: number;
  /** Bytes of the lines of one block together. */
  maxBlockBytes: number;
}

export const DEFAULT_BLOCK_BOUNDS: Readonly<BlockBounds> = Object.freeze({ maxExtrinsics: MAX_EXTRINSICS_PER_BLOCK, maxBlockBytes: 64 * 1024 * 1024 });

export class BlockAssembler {
  private current: { block: StoredBlock; count: number; bytes: number; txs: ImportedTx[]; success: boolean[] } | undefined;

  /** `afterSeq`: the seq of the last line already applied (lines at or below it are skipped). */
  constructor(
    private afterSeq: number,
    private readonly bounds: BlockBounds = DEFAULT_BLOCK_BOUNDS,
  ) {}

  /** Takes one line (`lineBytes`: its size on the wire); returns the block it completes, if any. */
  push(line: FeedLine, lineBytes = 0): AssembledBlock | undefined {
    if (line.seq <= this.afterSeq) return undefined;
    this.afterSeq = line.seq;
    const n = line.block.header.number;
    if (this.current !== undefined && (this.current.block.header.number !== n || !bytesEqual(this.current.block.hash, line.block.hash))) {
      throw new FeedFormatError(`block ${this.current.block.header.number} ended after ${this.current.txs.length} of its ${this.current.count} extrinsics`);
    }
    if (this.current === undefined) {
      if (line.extrinsicCount > this.bounds.maxExtrinsics) {
        throw new BlockImportError(`block ${n} announces ${line.extrinsicCount} extrinsics; a block holds at most ${this.bounds.maxExtrinsics}`);
      }
      this.current = { block: line.block, count: line.extrinsicCount, bytes: 0, txs: [], success: [] };
    }
    const cur = this.current;
    cur.bytes += lineBytes;
    if (cur.bytes > this.bounds.maxBlockBytes) {
      throw new BlockImportError(
        `block ${n} is larger than ${this.bounds.maxBlockBytes} bytes of feed lines (after ${cur.txs.length} of its ${cur.count} extrinsics)`,
      );
    }
    if (line.tx !== undefined) {
      if (line.tx.index !== cur.txs.length) throw new FeedFormatError(`block ${n}: extrinsic ${line.tx.index} arrived where ${cur.txs.length} was due`);
      if (line.tx.bytes === undefined) {
        throw new BlockImportError(`block ${n} was committed before the Directory kept extrinsic bytes; it cannot be verified`);
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
