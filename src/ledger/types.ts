/**
 * The shapes the ledger's parts and its users share: its options, a pool entry, a block reference, a transaction's
 * view, a block built and not yet stored, and what an outside chain or a followed ledger hands it.
 */
import type { Clock } from '../base/clock.js';
import type { Profile } from '../protocol/profile.js';
import type { GenesisConfig } from './block.js';
import type { Call } from './extrinsic.js';
import type { PoolEffects } from './pool-effects.js';
import type { ModuleHandlers } from './runtime/dispatch.js';
import type { VerifiedSignatures } from './runtime/verified-signatures.js';
import type { Overlay, StateValue } from './state.js';
import type { StoredBlock, TxMeta, TxRecord } from './store.js';

/** The most extrinsics a block holds (the default of {@link LedgerOptions.maxExtrinsicsPerBlock}). */
export const MAX_EXTRINSICS_PER_BLOCK = 1000;

export interface LedgerOptions {
  profile: Profile;
  genesis: GenesisConfig;
  blockIntervalMs: number;
  finalityDepth: number;
  clock: Clock;
  /** Produce blocks on a timer (false: only `produceBlock()` makes blocks — tests). */
  autoProduce: boolean;
  maxExtrinsicsPerBlock?: number;
  maxPendingPerKey?: number;
  maxPoolSize?: number;
  handlers?: ModuleHandlers;
  onError?: (err: unknown) => void;
  /**
   * Where the order of transactions comes from: this ledger's own blocks (`producer`: the embedded ledger, and the
   * PostgreSQL one's elected producer), or an outside chain's finalized blocks (`chain`, see {@link
   * Ledger.applyOrdered}). Under a chain an admitted transaction stays pending until the chain orders it: the pool
   * never drops one (the chain decides, the same on every Directory), and nothing here makes blocks.
   */
  ordering?: 'producer' | 'chain';
}

/** One extrinsic ordered by an outside chain, with what its admitting Directory knew of it (src/ledger/anchor-batch.ts). */
export interface OrderedTx {
  readonly bytes: Uint8Array;
  readonly meta: TxMeta;
  readonly submittedAtMs: number;
}

export interface PoolEntry {
  readonly tx: TxRecord;
  readonly call: Call;
  readonly bytes: Uint8Array;
  /** Its signatures this process found valid (at admission, or `Ledger.verifyPoolSignatures`). */
  readonly verified: VerifiedSignatures;
  /** What it read and wrote the last time it ran on the pool state (src/ledger/pool-effects.ts). */
  readonly effects?: PoolEffects;
}

/** A block built from the pool and not yet stored (see `Ledger.buildBlock`). */
export interface BuiltBlock {
  readonly block: StoredBlock;
  readonly writes: Map<string, StateValue | undefined>;
  /** The block's transactions with their outcome. */
  readonly records: TxRecord[];
  /** Pooled transactions that no longer pass on the new head. */
  readonly dropped: TxRecord[];
  /** The pool on the new head, and its state writes. */
  readonly pool: PoolEntry[];
  readonly poolWrites: Overlay;
}

/** One extrinsic of a block imported with `Ledger.importBlock`, with what its producer knew of it. */
export interface ImportedTx {
  bytes: Uint8Array;
  meta: TxMeta;
  submittedAtMs: number;
}

export interface BlockRef {
  number: number;
  hash: string;
  timestampMs: number;
}

export type TxView = { status: 'pending'; tx: TxRecord } | { status: 'in_block' | 'finalized' | 'failed'; tx: TxRecord; block?: BlockRef };
