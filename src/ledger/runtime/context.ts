/** What a call's execution may know besides the state: time, block, its own hash, and chain constants. */
import type { Profile } from '../../protocol/profile.js';
import type { VerifiedSignatures } from './verified-signatures.js';

export interface ExecContext {
  /** "now": the executing block's timestamp, or max(head timestamp, wall clock) in the pool (§1.2). */
  readonly nowMs: number;
  readonly blockNumber: number;
  readonly txHash: string;
  readonly profile: Profile;
  readonly genesisHash: Uint8Array;
  readonly attestors: readonly Uint8Array[];
  /** Prepare routes run the ledger's checks without the signature check (http-api.md §5.1). */
  readonly skipSignatures?: boolean;
  /** Signatures of this same call already found valid (at its admission), which need no second verification. */
  readonly verified?: VerifiedSignatures;
}
