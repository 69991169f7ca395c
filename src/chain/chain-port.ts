/**
 * What the Directory needs from a Substrate chain when the chain orders ddn's changes (`--ledger substrate`):
 * finalized blocks with their timestamp and the remarks they carry, and one account that posts remarks. The
 * implementation over @polkadot/api is src/chain/substrate-client.ts; tests may use an in-memory chain behind this
 * same interface.
 */

/** One `system.remark` / `system.remark_with_event` extrinsic of a block that dispatched successfully. */
export interface ChainRemark {
  /** Its index among the block's extrinsics. */
  readonly index: number;
  /** The signing account (SS58). */
  readonly signer: string;
  /** The remark's bytes exactly as stored on the chain. */
  readonly data: Uint8Array;
}

/** A block of the chain, as far as ddn reads it. */
export interface ChainBlock {
  readonly number: number;
  /** 0x-prefixed hex. */
  readonly hash: string;
  readonly parentHash: string;
  /** The block's `timestamp.set` (pallet_timestamp's `Now`), in ms. */
  readonly timestampMs: number;
  /** Successful remarks in block order (failed extrinsics are left out). */
  readonly remarks: readonly ChainRemark[];
}

/** Static facts of the connected chain. */
export interface ChainInfo {
  /** 0x-prefixed hex of block 0's hash. */
  readonly genesisHash: string;
  readonly specName: string;
  readonly tokenSymbol: string;
  readonly tokenDecimals: number;
  /** The Directory's own account (SS58). */
  readonly account: string;
  /**
   * The largest remark {@link ChainClient.submitRemark} takes (larger ones are refused as `too_large` before
   * submission): the runtime's block length limit for normal transactions, less room for the block's inherents.
   */
  readonly maxRemarkBytes: number;
}

/** Why a remark was not included. */
export type ChainErrorKind =
  /** No endpoint answers (every `--chain-url` tried). */
  | 'unavailable'
  /** The account cannot pay the fee (balance too low). */
  | 'insufficient_funds'
  /** The remark is larger than the chain accepts in one extrinsic. */
  | 'too_large'
  /** The chain refused or dropped the transaction (invalid, usurped, dropped, retracted past finality, ...). */
  | 'rejected';

export class ChainError extends Error {
  constructor(
    readonly kind: ChainErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'ChainError';
  }
}

/** A remark finalized on the chain. */
export interface RemarkIncluded {
  readonly blockNumber: number;
  readonly blockHash: string;
  /** The fee the account paid for it, in the token's smallest unit. */
  readonly fee: bigint;
}

export interface ChainClient {
  /** Connects (trying each URL in turn until one answers); rejects with ChainError('unavailable') after `timeoutMs`. */
  connect(timeoutMs: number): Promise<void>;
  /** Facts of the connected chain (after connect). */
  info(): ChainInfo;
  /** True while an endpoint is connected. */
  readonly connected: boolean;
  /** The number of the newest finalized block. */
  finalizedNumber(): Promise<number>;
  /** The finalized block `number` (must be ≤ the finalized head): header, timestamp and successful remarks. */
  block(number: number): Promise<ChainBlock>;
  /**
   * Calls `listener` with the newest finalized block number whenever it advances (possibly skipping numbers: the
   * caller reads the ones in between with {@link block}); survives reconnects and failover. Returns an unsubscribe.
   */
  onFinalized(listener: (number: number) => void): () => void;
  /**
   * Signs `data` as `system.remark_with_event` with the account's key and submits it, resolving once it is in a
   * finalized block, rejecting with a ChainError when it cannot be. One call at a time per client (the caller
   * serialises); the nonce comes from the chain (pending transactions included).
   */
  submitRemark(data: Uint8Array): Promise<RemarkIncluded>;
  /** The account's free balance, in the token's smallest unit. */
  balance(): Promise<bigint>;
  /** The fee a remark of `bytes` bytes would cost now. */
  estimateFee(bytes: number): Promise<bigint>;
  /** Told when the connection drops or comes back (failover included). */
  onConnection(listener: (connected: boolean, url: string | null) => void): () => void;
  close(): Promise<void>;
}
