/**
 * Calls run under the ledger's rules on a state: the context of one call (its time and block, the chain's
 * constants), and a pool's entries run again on a new state (ledger-rules.md §2.5 item 4) — each kept with what it
 * read and wrote, or dropped with its failure.
 */
import type { Profile } from '../protocol/profile.js';
import type { GenesisConfig } from './block.js';
import { LedgerFailure } from './errors.js';
import type { Call } from './extrinsic.js';
import { carryPool, runRecorded } from './pool-effects.js';
import type { ExecContext } from './runtime/context.js';
import { applyAtomically, executeCall, type ModuleHandlers } from './runtime/dispatch.js';
import type { VerifiedSignatures } from './runtime/verified-signatures.js';
import type { Overlay, StateReader } from './state.js';
import type { TxRecord } from './store.js';
import { droppedRecord } from './tx-outcome.js';
import type { PoolEntry } from './types.js';

/** A pool run on a state: the entries that pass (with their effects when recorded), and the others as dropped records. */
export interface PoolRun {
  readonly state: Overlay;
  readonly pool: PoolEntry[];
  readonly dropped: TxRecord[];
}

export class Executor {
  constructor(
    private readonly profile: Profile,
    private readonly genesis: GenesisConfig,
    private readonly genesisHash: Uint8Array,
    private readonly handlers: ModuleHandlers | undefined,
    /** The most extrinsics a block holds: how far past what a block touched a carried pool runs again. */
    private readonly maxPerBlock: number,
  ) {}

  ctx(nowMs: number, blockNumber: number, txHash: string, skipSignatures = false, verified?: VerifiedSignatures): ExecContext {
    return {
      nowMs,
      blockNumber,
      txHash,
      profile: this.profile,
      genesisHash: this.genesisHash,
      attestors: this.genesis.personaAttestors,
      skipSignatures,
      ...(verified ? { verified } : {}),
    };
  }

  /** Runs `call` on `state`, keeping its writes only when it succeeds; its failure, else null. */
  apply(state: Overlay, ctx: ExecContext, call: Call, reads: StateReader = state): LedgerFailure | null {
    return applyAtomically(state, ctx, call, this.handlers, reads);
  }

  /**
   * Runs a pooled entry on `state`: the entry with what it read and wrote (a new object: a block built and not
   * committed leaves the pool's entries as they were), or its failure, changing nothing.
   */
  runPooled(state: Overlay, e: PoolEntry, ctx: ExecContext, reads: StateReader = state): PoolEntry | LedgerFailure {
    const r = runRecorded(state, (s) => executeCall(s, ctx, e.call, this.handlers), reads);
    return r instanceof LedgerFailure ? r : { ...e, effects: r };
  }

  /**
   * Applies `entries` in order onto `state`; those that fail are returned as dropped records. `record`: the pool is
   * formed of them, and each entry keeps what it read and wrote (else `state` is a scratch state).
   */
  validate(state: Overlay, entries: readonly PoolEntry[], nowMs: number, blockNumber: number, skipSignatures = false, record = false): PoolRun {
    const pool: PoolEntry[] = [];
    const dropped: TxRecord[] = [];
    for (const e of entries) {
      const ctx = this.ctx(nowMs, blockNumber, e.tx.txHash, skipSignatures, e.verified);
      const ran = record ? this.runPooled(state, e, ctx) : (this.apply(state, ctx, e.call) ?? withoutEffects(e));
      if (ran instanceof LedgerFailure) dropped.push(droppedRecord(e.tx, ran, nowMs));
      else pool.push(ran);
    }
    return { state, pool, dropped };
  }

  /**
   * The pool's `entries` on a new head, `state` (§2.5 item 4), in work bounded by the block: only the entries
   * `touched` reaches and the next block's worth run again ({@link carryPool}); with `touched` null (an entry
   * the block finished has no recorded effects), every entry runs again. `rerun`: how many ran again.
   */
  carry(
    state: Overlay,
    touched: Set<string> | null,
    entries: readonly PoolEntry[],
    nowMs: number,
    blockNumber: number,
    skipSignatures = false,
  ): PoolRun & { readonly rerun: number } {
    if (touched === null) return { ...this.validate(state, entries, nowMs, blockNumber, skipSignatures, true), rerun: entries.length };
    const next = carryPool(state, entries, touched, this.maxPerBlock, (s, e, reads) =>
      this.runPooled(s, e, this.ctx(nowMs, blockNumber, e.tx.txHash, skipSignatures, e.verified), reads),
    );
    return { state, pool: next.pool, dropped: next.failed.map((f) => droppedRecord(f.entry.tx, f.failure, nowMs)), rerun: next.rerun };
  }
}

/** `e` without the effects of an earlier run: they need not be its effects on a state it ran on unrecorded. */
function withoutEffects(e: PoolEntry): PoolEntry {
  if (e.effects === undefined) return e;
  const { tx, call, bytes, verified } = e;
  return { tx, call, bytes, verified };
}
