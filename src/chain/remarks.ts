/**
 * Which extrinsics of a block are remarks ddn reads: signed, top-level `system.remark` or
 * `system.remark_with_event`, whose `ExtrinsicSuccess` event exists. Remarks nested in batches or proxies are not
 * read (one rule every Directory applies alike).
 */
import type { ChainRemark } from './chain-port.js';

/** One extrinsic of a block, as far as the rule looks. */
export interface ExtrinsicView {
  readonly section: string;
  readonly method: string;
  /** SS58 of the signer; undefined for an unsigned extrinsic (inherents). */
  readonly signer: string | undefined;
  /** The remark's bytes (read only for remarks). */
  data(): Uint8Array;
}

const REMARKS = new Set(['remark', 'remarkWithEvent']);

/** The successful signed remarks among `extrinsics`, in block order; `succeeded` holds the indexes that dispatched. */
export function remarksOf(extrinsics: readonly ExtrinsicView[], succeeded: ReadonlySet<number>): ChainRemark[] {
  const out: ChainRemark[] = [];
  extrinsics.forEach((ex, index) => {
    if (ex.section !== 'system' || !REMARKS.has(ex.method) || ex.signer === undefined || !succeeded.has(index)) return;
    out.push({ index, signer: ex.signer, data: ex.data() });
  });
  return out;
}
