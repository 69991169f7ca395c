/**
 * A batch of ddn extrinsics carried in one chain remark (`--ledger substrate`, docs/chain.md "The remark format"):
 *
 *     "ddn1" ‖ SCALE(network_id: str) ‖ SCALE(Vec<Item>)
 *     Item = submitted_at_ms u64 ‖ subject str ‖ action str ‖ nonce_domain Option<str> ‖ nonce Option<str>
 *            ‖ limit_key str ‖ extrinsic Vec<u8>
 *
 * Anyone can post a remark, so decoding is strict and bounded: a remark of another network, or one that does
 * not decode exactly (unknown magic, trailing bytes, a bound exceeded, a non-canonical encoding), is skipped
 * whole — the same verdict on every Directory, from the bytes alone.
 */
import { utf8 } from '../base/bytes.js';
import { ScaleDecodeError, type ScaleReader, ScaleWriter, tryDecodeStrict } from '../codec/scale.js';
import type { TxMeta } from './store.js';

/** The first bytes of every ddn remark. */
export const ANCHOR_MAGIC = utf8('ddn1');
/** A network id: what operators of one ddn network agree on (several networks may share a chain). */
export const NETWORK_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Bounds of one remark's batch. */
export const ANCHOR_LIMITS = Object.freeze({
  /** Items of one batch. */
  maxItems: 1000,
  /** Bytes of one item's extrinsic. */
  maxExtrinsicBytes: 262_144,
  /** Characters of a label (subject, action, nonce domain, nonce, limit key). */
  maxLabel: 512,
});

/** One extrinsic of a batch, with what the admitting Directory knew of it. */
export interface AnchoredTx {
  readonly submittedAtMs: number;
  readonly meta: TxMeta;
  readonly bytes: Uint8Array;
}

export interface AnchorBatch {
  readonly networkId: string;
  readonly items: readonly AnchoredTx[];
}

const MAX_U64_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function writeItem(w: ScaleWriter, it: AnchoredTx): void {
  w.u64(BigInt(it.submittedAtMs))
    .str(it.meta.subject)
    .str(it.meta.action)
    .option(it.meta.nonceDomain, (x, s) => x.str(s))
    .option(it.meta.nonce, (x, s) => x.str(s))
    .str(it.meta.limitKey)
    .bytes(it.bytes);
}

/** The remark bytes of `batch`. */
export function encodeAnchorBatch(batch: AnchorBatch): Uint8Array {
  return new ScaleWriter().raw(ANCHOR_MAGIC).str(batch.networkId).vec(batch.items, writeItem).finish();
}

/** The encoded size of one item, for packing batches under a size bound. */
export function anchoredTxSize(it: AnchoredTx): number {
  const w = new ScaleWriter();
  writeItem(w, it);
  return w.length;
}

/** The most bytes a batch of `networkId` takes besides its items (the item count's compact length included). */
export function anchorOverhead(networkId: string): number {
  return encodeAnchorBatch({ networkId, items: [] }).length + 4;
}

function readBatch(r: ScaleReader): AnchorBatch {
  const magic = r.raw(ANCHOR_MAGIC.length);
  if (!magic.every((b, i) => b === ANCHOR_MAGIC[i])) throw new ScaleDecodeError('not a ddn remark');
  const label = () => r.str(ANCHOR_LIMITS.maxLabel);
  const networkId = r.str(64);
  const items = r.vec(ANCHOR_LIMITS.maxItems, (): AnchoredTx => {
    const at = r.u64();
    if (at > MAX_U64_SAFE) throw new ScaleDecodeError('submitted_at_ms out of range');
    const subject = label();
    const action = label();
    const nonceDomain = r.option(label);
    const nonce = r.option(label);
    const limitKey = label();
    const bytes = r.bytes(ANCHOR_LIMITS.maxExtrinsicBytes);
    const meta: TxMeta = {
      subject,
      action,
      limitKey,
      ...(nonceDomain === null ? {} : { nonceDomain }),
      ...(nonce === null ? {} : { nonce }),
    };
    return { submittedAtMs: Number(at), meta, bytes };
  });
  return { networkId, items };
}

/** True when `data` starts as a ddn remark (of any network). */
export function isAnchorRemark(data: Uint8Array): boolean {
  return data.length >= ANCHOR_MAGIC.length && ANCHOR_MAGIC.every((b, i) => data[i] === b);
}

/**
 * The batch a remark carries for `networkId`; undefined when the remark is not a ddn remark of that network or
 * does not decode exactly (see the file comment).
 */
export function decodeAnchorBatch(data: Uint8Array, networkId: string): AnchorBatch | undefined {
  if (!isAnchorRemark(data)) return undefined;
  const batch = tryDecodeStrict(data, readBatch, encodeAnchorBatch);
  return batch !== undefined && batch.networkId === networkId ? batch : undefined;
}
