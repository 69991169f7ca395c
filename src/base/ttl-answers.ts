/**
 * The one cache of answers from a slower source, on lru-cache: while an answer is younger than its TTL, the same
 * key gets the same promise (so concurrent lookups share one request); failures are never kept, and `null` ("no
 * such thing") answers only when asked to. Bounded: past `maxEntries` the least recently used entry goes. The
 * TTL is read from the injected clock (tests move it), so lru-cache's own timers are not used.
 *
 * A lookup in flight waits in a plain map and enters the LRU only once its answer is known to be kept: an answer
 * that is not kept (a Relay's "no policy" lookup, on every envelope) then never touches the LRU. lru-cache
 * empties itself when its last entry is deleted, filling arrays of `maxEntries` slots (session 15 measured
 * 8 % of a Relay's CPU in that fill).
 *
 * Used by the remote Directory's answer cache (src/adapters/directory-view-cache.ts), the Relay's policy
 * lookups (src/relay/policy-cache.ts) and remote event policies (src/events/policy-source.ts).
 */
import { LRUCache } from 'lru-cache';
import type { Clock } from './clock.js';

/** Options of {@link TtlAnswers}. */
export interface TtlAnswersOptions {
  /** How long an answer is reused at most. */
  ttlMs: number;
  /** Answers held at most. */
  maxEntries: number;
  /** Reuse `null` answers too (default: only real answers). */
  keepNull?: boolean;
}

interface Entry {
  answer: Promise<unknown>;
  expiresAtMs: number;
}

/** A TTL- and size-bounded map from keys to pending or settled answers. */
export class TtlAnswers {
  /** Answers kept, each until its expiry. */
  private readonly entries: LRUCache<string, Entry>;
  /** Lookups in flight (shared by concurrent callers), by key; as many as lookups run at once, outside `maxEntries`. */
  private readonly pending = new Map<string, Entry>();
  /** Lookups answered from a kept answer (metrics). */
  hits = 0;
  /** Lookups that asked `load()` (metrics). */
  misses = 0;

  constructor(
    private readonly clock: Clock,
    private readonly options: TtlAnswersOptions,
  ) {
    this.entries = new LRUCache<string, Entry>({ max: options.maxEntries });
  }

  /** Answers held now (observability, tests). */
  get size(): number {
    return this.entries.size + this.pending.size;
  }

  /**
   * The reused answer of `key`, or `load()`'s, kept for the TTL unless it fails (or is null, unless kept).
   * `maxTtlMsOf` may shorten the TTL of one answer once it arrived (an answer that says how long it may be
   * reused; 0 keeps it not at all).
   */
  get<T>(key: string, load: () => Promise<T | null>, maxTtlMsOf?: (answer: T) => number | undefined): Promise<T | null> {
    const now = this.clock.nowMs();
    const hit = this.pending.get(key) ?? this.entries.get(key);
    if (hit !== undefined && hit.expiresAtMs > now) {
      this.hits++;
      return hit.answer as Promise<T | null>;
    }
    this.misses++;
    const answer = load();
    const entry: Entry = { answer, expiresAtMs: now + this.options.ttlMs };
    this.pending.set(key, entry);
    // the entry leaves `pending` when its answer arrives (unless forgotten or replaced meanwhile), into the LRU if kept
    const settle = (keep: boolean): void => {
      if (this.pending.get(key) !== entry) return;
      this.pending.delete(key);
      if (keep) this.entries.set(key, entry);
      else if (this.entries.has(key)) this.entries.delete(key);
    };
    answer.then(
      (v) => {
        if (v === null) {
          settle(this.options.keepNull === true);
          return;
        }
        const max = maxTtlMsOf?.(v);
        if (max !== undefined) entry.expiresAtMs = Math.min(entry.expiresAtMs, now + max);
        settle(max === undefined || max > 0);
      },
      () => settle(false),
    );
    return answer;
  }

  /** Forgets `key`'s answer. */
  delete(key: string): void {
    this.pending.delete(key);
    this.entries.delete(key);
  }
}
