/**
 * Ledger state as a key → value map. Values are JSON-like (plus bigint and Uint8Array) and treated as
 * immutable: writers always store a new value. An `Overlay` layers pending writes over a base reader; block
 * execution, the pool state and each extrinsic's atomic execution are overlays.
 */
import { isJsonObject } from '../base/guards.js';

export type StateValue = unknown;

export interface StateReader {
  get(key: string): StateValue | undefined;
}

const DELETED = Symbol('deleted');

export class Overlay implements StateReader {
  constructor(
    private readonly base: StateReader,
    private readonly writes = new Map<string, StateValue | typeof DELETED>(),
  ) {}

  get(key: string): StateValue | undefined {
    const v = this.writes.get(key);
    if (v === undefined) return this.base.get(key);
    return v === DELETED ? undefined : v;
  }
  set(key: string, value: StateValue | undefined): void {
    this.writes.set(key, value === undefined ? DELETED : value);
  }
  delete(key: string): void {
    this.writes.set(key, DELETED);
  }
  /** True when this overlay (not its base) holds a write of `key`, a deletion too. */
  wrote(key: string): boolean {
    return this.writes.has(key);
  }
  child(): Overlay {
    return new Overlay(this);
  }
  /**
   * An overlay over `base` holding this one's writes — the same writes, not a copy (a pool's writes laid over the
   * head that took in what they were laid over): this one is not to be used after.
   */
  over(base: StateReader): Overlay {
    return new Overlay(base, this.writes);
  }
  /** Copies this overlay's writes into `target` (used to commit a child into its parent). */
  commitInto(target: Overlay): void {
    for (const [k, v] of this.writes) target.writes.set(k, v);
  }
  /** The keys written (deleted ones too). */
  writtenKeys(): IterableIterator<string> {
    return this.writes.keys();
  }
  /** The writes, `undefined` meaning deleted. */
  changes(): Map<string, StateValue | undefined> {
    const out = new Map<string, StateValue | undefined>();
    for (const [k, v] of this.writes) out.set(k, v === DELETED ? undefined : v);
    return out;
  }
  get size(): number {
    return this.writes.size;
  }
}

export const EMPTY_STATE: StateReader = { get: () => undefined };

/** JSON text for a state value: bigint → {"$n":"…"}, Uint8Array → {"$x":"hex"}. */
export function serializeStateValue(v: StateValue): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (typeof x === 'bigint') return { $n: x.toString() };
    if (x instanceof Uint8Array) return { $x: Buffer.from(x).toString('hex') };
    return x;
  });
}

export function deserializeStateValue(s: string): StateValue {
  // a walk over the parsed value, not a JSON.parse reviver: the same values, at a fraction of the cost (the miss
  // path of a resolve decodes a DID record per request)
  return revive(JSON.parse(s));
}

/** {"$n":"…"} → bigint and {"$x":"hex"} → Uint8Array, in place, anywhere in `x`. */
function revive(x: unknown): unknown {
  if (Array.isArray(x)) {
    for (let i = 0; i < x.length; i++) x[i] = revive(x[i]);
    return x;
  }
  if (!isJsonObject(x)) return x;
  const o = x;
  if (typeof o.$n === 'string' && Object.keys(o).length === 1) return BigInt(o.$n);
  if (typeof o.$x === 'string' && Object.keys(o).length === 1) return new Uint8Array(Buffer.from(o.$x, 'hex'));
  for (const k of Object.keys(o)) {
    const v = o[k];
    if (v === null || typeof v !== 'object') continue;
    const r = revive(v);
    // defined, not assigned: a key named __proto__ stays a plain property
    if (r !== v) Object.defineProperty(o, k, { value: r, writable: true, enumerable: true, configurable: true });
  }
  return o;
}
