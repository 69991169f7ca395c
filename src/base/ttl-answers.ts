/**
 * Answers of a remote source reused for a short time: while an answer is younger than the TTL, the same key gets
 * the same promise (so concurrent lookups share one request); failures are never kept, and `null` ("no such
 * thing") answers only when asked to. Bounded: past `maxEntries` the oldest entry goes.
 */
import type { Clock } from './clock.js';

/** Options of {@link TtlAnswers}. */
export interface TtlAnswersOptions {
  /** How long an answer is reused. */
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

/** A TTL-bounded map from keys to pending or settled answers. */
export class TtlAnswers {
  private readonly entries = new Map<string, Entry>();
  /** Lookups answered from a kept answer (metrics). */
  hits = 0;
  /** Lookups that asked `load()` (metrics). */
  misses = 0;

  constructor(
    private readonly clock: Clock,
    private readonly options: TtlAnswersOptions,
  ) {}

  /** Answers held now (observability, tests). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * The reused answer of `key`, or `load()`'s, kept for the TTL unless it fails (or is null, unless kept).
   * `maxTtlMsOf` may shorten the TTL of one answer once it arrived (an answer that says how long it may be reused).
   */
  get<T>(key: string, load: () => Promise<T | null>, maxTtlMsOf?: (answer: T) => number | undefined): Promise<T | null> {
    const now = this.clock.nowMs();
    const hit = this.entries.get(key);
    if (hit !== undefined && hit.expiresAtMs > now) {
      this.hits++;
      return hit.answer as Promise<T | null>;
    }
    if (hit !== undefined) this.entries.delete(key);
    this.misses++;
    const answer = load();
    if (this.entries.size >= this.options.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
    const entry: Entry = { answer, expiresAtMs: now + this.options.ttlMs };
    this.entries.set(key, entry);
    const drop = () => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    };
    answer.then((v) => {
      if (v === null) {
        if (this.options.keepNull !== true) drop();
        return;
      }
      const max = maxTtlMsOf?.(v);
      if (max !== undefined) entry.expiresAtMs = Math.min(entry.expiresAtMs, now + max);
    }, drop);
    return answer;
  }

  /** Forgets `key`'s answer. */
  delete(key: string): void {
    this.entries.delete(key);
  }
}
