/** A pending transaction read back from the store as a pool entry (a start, or a shared pool's row another process admitted). */
import { decodeExtrinsic } from './extrinsic.js';
import { VerifiedSignatures } from './runtime/verified-signatures.js';
import type { TxRecord } from './store.js';
import type { PoolEntry } from './types.js';

/** The pool entry of a stored pending row; undefined when it holds no bytes or they do not decode. */
export function entryFromStored(tx: TxRecord): PoolEntry | undefined {
  const call = tx.bytes ? decodeExtrinsic(tx.bytes) : undefined;
  if (!call || !tx.bytes) return undefined;
  // a shared pool's row carries what its admitting process verified (see VerifiedSignatures for why it is safe)
  const verified = tx.signatures === undefined ? new VerifiedSignatures() : VerifiedSignatures.vouchedFor(tx.signatures);
  const { signatures: _, ...kept } = tx;
  return { tx: kept, call, bytes: tx.bytes, verified };
}
