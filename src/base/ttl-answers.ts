/**
 * The one cache of answers from a slower source, on lru-cache: while an answer is younger than its TTL, the same
 * key gets the same promise (so concurrent lookups share one request); failures are never kept, and `null` ("no
 * such thing") answers only when asked to. Bounded: past `maxEntries` the least recently used entry goes. The
 * TTL is read from the injected clock (tests move it), so lru-cache's own timers are not used.
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
  private readonly entries: LRUCache<string, Entry>;
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
    return this.entries.size;
  }

  /**
   * The reused answer of `key`, or `load()`'s, kept for the TTL unless it fails (or is null, unless kept).
   * `maxTtlMsOf` may shorten the TTL of one answer once it arrived (an answer that says how long it may be
   * reused; 0 keeps it not at all).
   */
  get<T>(key: string, load: () => Promise<T | null>, maxTtlMsOf?: (answer: T) => number | undefined): Promise<T | null> {
    const now = this.clock.nowMs();
    const hit = this.entries.get(key);
    if (hit !== undefined && hit.expiresAtMs > now) {
      this.hits++;
      return hit.answer as Promise<T | null>;
    }
    this.misses++;
    const answer = load();
    const entry: Entry = { answer, expiresAtMs: now + this.options.ttlMs };
    this.entries.set(key, entry);
    const drop = (): void => {
      if (this.entries.peek(key) === entry) this.entries.delete(key);
    };
    answer.then((v) => {
      if (v === null) {
        if (this.options.keepNull !== true) drop();
        return;
      }
      const max = maxTtlMsOf?.(v);
      if (max === undefined) return;
      if (max <= 0) drop();
      else entry.expiresAtMs = Math.min(entry.expiresAtMs, now + max);
    }, drop);
    return answer;
  }

  /** Forgets `key`'s answer. */
  delete(key: string): void {
    this.entries.delete(key);
  }
}
