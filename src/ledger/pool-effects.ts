/**
 * What each pooled transaction read and wrote when it last ran on the pool state, and the pool carried onto a new
 * head with it (ledger-rules.md §2.5 item 4) in work bounded by the block, not by the pool's size: an entry that
 * read nothing the block (or an entry re-run before it) wrote would run exactly as before, so its writes are laid
 * over the new head as they are; only the entries the block's writes reach, and the next block's worth at the
 * front of the pool (whose time checks, `valid_until > now`, are re-run as a full rebuild would), run again.
 */
import { LedgerFailure } from './errors.js';
import { Overlay, type StateReader, type StateValue } from './state.js';

/** The keys a pooled transaction read from the pool state under it (each with the value it read), and its writes over it. */
export interface PoolEffects {
  readonly reads: ReadonlyMap<string, StateValue | undefined>;
  readonly writes: ReadonlyMap<string, StateValue | undefined>;
}

/** Records the keys read through it. */
export class ReadRecorder implements StateReader {
  readonly keys = new Set<string>();
  constructor(private readonly base: StateReader) {}
  get(key: string): StateValue | undefined {
    this.keys.add(key);
    return this.base.get(key);
  }
}

/** Records the keys read through it, each with the value it gave first. */
export class ValueRecorder implements StateReader {
  readonly values = new Map<string, StateValue | undefined>();
  constructor(private readonly base: StateReader) {}
  get(key: string): StateValue | undefined {
    const v = this.base.get(key);
    if (!this.values.has(key)) this.values.set(key, v);
    return v;
  }
}

/**
 * `state` as a pooled entry run again on it sees it: a key the entry read on the pool state before that `changed`
 * does not name has the value it read then ({@link carryPool}, {@link executeBlock}), without asking `state` (whose
 * head may have to read it from the store).
 */
export class Recalled implements StateReader {
  constructor(
    private readonly state: StateReader,
    private readonly before: ReadonlyMap<string, StateValue | undefined>,
    private readonly changed: (key: string) => boolean,
  ) {}
  get(key: string): StateValue | undefined {
    return this.before.has(key) && !this.changed(key) ? this.before.get(key) : this.state.get(key);
  }
}

/**
 * Runs `execute` atomically on `state`, recording what it read and wrote: on success its writes are committed
 * into `state` and returned with its reads; a {@link LedgerFailure} is returned, and `state` left unchanged.
 * `base`, when given, is what `execute` reads instead of `state`: `state` as it is, read another way.
 */
export function runRecorded(state: Overlay, execute: (s: Overlay) => void, base: StateReader = state): PoolEffects | LedgerFailure {
  const reads = new ValueRecorder(base);
  const scratch = new Overlay(reads);
  try {
    execute(scratch);
  } catch (e) {
    if (e instanceof LedgerFailure) return e;
    throw e;
  }
  scratch.commitInto(state);
  return { reads: reads.values, writes: scratch.changes() };
}

/** A pooled transaction as {@link carryPool} sees it. */
export interface Carried {
  readonly effects?: PoolEffects;
}

/** What {@link carryPool} made of a pool: the entries that still pass, the others with their failure. */
export interface CarriedPool<E> {
  pool: E[];
  failed: { entry: E; failure: LedgerFailure }[];
  /** Entries run again (the rest kept their effects). */
  rerun: number;
}

/**
 * `entries` (in pool order) laid over `state`, a new head: an entry with known effects that read no key in
 * `touched` keeps them, unless it is among the first `rerunFront` entries that pass; every other entry runs
 * again through `run` (which gives it back with its new effects, or its failure), and what it wrote before and
 * writes now joins `touched`, so that the entries after it that read it run again too. `touched` holds, on entry, every key whose
 * value on the new head may differ from what the entries saw: the block's writes, and the writes of the entries
 * the block finished. So a key an entry read that `touched` does not hold has, where the entry stands, the value
 * it read before: an entry run again reads those from its effects (`run`'s `reads`), not from `state` — the front's
 * entries, run again for their time checks, read nothing from the store, however long ago they were admitted.
 */
export function carryPool<E extends Carried>(
  state: Overlay,
  entries: readonly E[],
  touched: Set<string>,
  rerunFront: number,
  run: (state: Overlay, entry: E, reads: StateReader) => E | LedgerFailure,
): CarriedPool<E> {
  const pool: E[] = [];
  const failed: CarriedPool<E>['failed'] = [];
  let rerun = 0;
  for (const e of entries) {
    const before = e.effects;
    if (before !== undefined && pool.length >= rerunFront && !readsAny(before.reads, touched)) {
      for (const [k, v] of before.writes) state.set(k, v);
      pool.push(e);
      continue;
    }
    rerun++;
    const ran = run(state, e, before === undefined ? state : new Recalled(state, before.reads, (k) => touched.has(k)));
    if (before !== undefined) for (const k of before.writes.keys()) touched.add(k);
    if (ran instanceof LedgerFailure) {
      failed.push({ entry: e, failure: ran });
      continue;
    }
    for (const k of ran.effects?.writes.keys() ?? []) touched.add(k);
    pool.push(ran);
  }
  return { pool, failed, rerun };
}

function readsAny(reads: ReadonlyMap<string, StateValue | undefined>, touched: ReadonlySet<string>): boolean {
  for (const k of reads.keys()) if (touched.has(k)) return true;
  return false;
}

/**
 * The keys a block may have changed for the entries after `finished`: the block's writes and every write of the
 * finished entries; null when one of them has no recorded effects (then every entry must run again).
 */
export function touchedBy(blockWrites: Iterable<string>, finished: Iterable<Carried>): Set<string> | null {
  const touched = new Set(blockWrites);
  for (const e of finished) {
    if (e.effects === undefined) return null;
    for (const k of e.effects.writes.keys()) touched.add(k);
  }
  return touched;
}
