/**
 * Typed slots of the ledger state: a record kind's key (from its id) and its value's type, declared together once
 * beside the kind (records.ts, runtime/*-state.ts). The state holds `unknown` values; a slot's `read` is the one
 * place where a stored value meets its type, sound because every value under a slot's keys is written through that
 * slot's `write`, typed (and restored by the ledger stores as it was written). No reader casts.
 */
import type { Overlay, StateReader } from './state.js';

/** A kind of state record: `I` the id that names one, `T` the record. */
export interface StateSlot<I, T> {
  /** The state key of the record `id` names. */
  key(id: I): string;
  /** The record, undefined when absent. */
  read(s: StateReader, id: I): T | undefined;
  /** Stores the record (undefined deletes it). */
  write(s: Overlay, id: I, value: T | undefined): void;
}

/** The slot of records of type `T` stored under `key(id)`. */
export function stateSlot<I, T>(key: (id: I) => string): StateSlot<I, T> {
  return {
    key,
    // the slot's type is its writer's: the one cast from a state value to a record type
    read: (s, id) => s.get(key(id)) as T | undefined,
    write: (s, id, value) => s.set(key(id), value),
  };
}
