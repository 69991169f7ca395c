/**
 * The answers of a mailbox's per-recipient reads — a page of messages (§11.5 pull) and a summary — kept in memory
 * while the recipient's mailbox is unchanged. A recipient polls an unchanged mailbox far more often than it
 * changes, and such a read costs more than everything else a pull does on the event loop, so an unchanged
 * mailbox is answered from memory.
 *
 * What keeps it exact:
 * - The store keeps a version per recipient that every change of the recipient's entries or chunk sets moves, in
 *   the transaction that makes the change, whichever process makes it. An answer is kept with the version read
 *   before it, and served only while the version read now is the same: then nothing of the recipient changed
 *   since (a change between the version's read and the answer's costs one needless read later, never a stale
 *   answer).
 * - An answer is served only while every entry it shows is unexpired (`nowMs` below the earliest `expires_at`),
 *   and never to a clock that went back before its read. Entries it does not show stay hidden as time goes on:
 *   expired ones stay expired, and a chunk set completes only through a store, which moves the version.
 * - Kept answers are shared between requests: callers render them and never change them. A kept page is marked
 *   `kept`, so a caller may keep what it makes of it with it (`views.ts` keeps the answer's bytes).
 *
 * Memory is bounded by bytes (envelope text, and an estimate per entry) and by recipients; the least recently
 * used recipient goes first, and one recipient takes an eighth of the bytes at most. A page with an envelope read
 * as bytes (a large one) is not kept.
 */
import type { MessagePage, SummaryEntry } from './mailbox-store.js';

/** Bounds of a {@link RecipientReadCache}; `maxBytes` 0 keeps nothing. */
export interface ReadCacheLimits {
  readonly maxBytes: number;
  readonly maxRecipients: number;
}

/** What a {@link RecipientReadCache} has done and holds. */
export interface ReadCacheStats {
  readonly hits: number;
  readonly misses: number;
  readonly recipients: number;
  readonly bytes: number;
}

/** The default bounds: 32 MiB, 10,000 recipients. */
export const DEFAULT_READ_CACHE_LIMITS: ReadCacheLimits = Object.freeze({ maxBytes: 32 * 1024 * 1024, maxRecipients: 10_000 });

/**
 * A recipient's mailbox version as the store reads it: `null` while the store holds nothing of the recipient (so
 * never equal to a version it has after its first store).
 */
export type MailboxVersion = number | null;

/** Bytes counted for an entry besides its envelope (its metadata objects and strings). */
const ENTRY_OVERHEAD_BYTES = 256;

interface Kept<T> {
  readonly value: T;
  readonly version: MailboxVersion;
  readonly readAtMs: number;
  /** The earliest `expires_at` among the entries shown. */
  readonly validUntilMs: number;
  readonly bytes: number;
}

interface RecipientReads {
  readonly page?: Kept<MessagePage> & { readonly maxEnvelopeBytes: number };
  readonly summary?: Kept<SummaryEntry[]>;
}

function bytesOf(r: RecipientReads): number {
  return (r.page?.bytes ?? 0) + (r.summary?.bytes ?? 0);
}

function earliest(expiries: readonly number[]): number {
  let min = Number.POSITIVE_INFINITY;
  for (const e of expiries) if (e < min) min = e;
  return min;
}

function servable<T>(k: Kept<T> | undefined, version: MailboxVersion, nowMs: number): k is Kept<T> {
  return k !== undefined && k.version === version && nowMs >= k.readAtMs && nowMs < k.validUntilMs;
}

/** `k` while it is of `version` (a kept answer of an older version can never be served again). */
function current<K extends Kept<unknown>>(k: K | undefined, version: MailboxVersion): K | undefined {
  return k !== undefined && k.version === version ? k : undefined;
}

/** See the file comment. */
export class RecipientReadCache {
  /** Kept answers by recipient DID, least recently used first (a hit moves its recipient to the end). */
  private readonly kept = new Map<string, RecipientReads>();
  private bytes = 0;
  private hits = 0;
  private misses = 0;

  constructor(private readonly limits: ReadCacheLimits = DEFAULT_READ_CACHE_LIMITS) {}

  get stats(): ReadCacheStats {
    return { hits: this.hits, misses: this.misses, recipients: this.kept.size, bytes: this.bytes };
  }

  /**
   * `did`'s page for `maxEnvelopeBytes` at `nowMs`, its mailbox at `version`: the kept one while it holds, else
   * `read()`'s (kept if it may be; `read` runs after `version` was read).
   */
  page(did: string, version: MailboxVersion, nowMs: number, maxEnvelopeBytes: number, read: () => MessagePage): MessagePage {
    const r = this.kept.get(did);
    if (r !== undefined && servable(r.page, version, nowMs) && r.page.maxEnvelopeBytes === maxEnvelopeBytes) {
      return this.hit(did, r, r.page.value);
    }
    this.misses++;
    const fresh = read();
    let bytes = 0;
    for (const e of fresh.entries) {
      if (typeof e.envelope !== 'string') return fresh;
      bytes += e.envelope.length + ENTRY_OVERHEAD_BYTES;
    }
    const page: MessagePage = { ...fresh, kept: true };
    const validUntilMs = earliest(page.entries.map((e) => e.meta.expiresAtMs));
    const kept = { summary: current(r?.summary, version), page: { value: page, version, readAtMs: nowMs, validUntilMs, bytes, maxEnvelopeBytes } };
    return this.keep(did, kept) ? page : fresh;
  }

  /** `did`'s summary at `nowMs`, its mailbox at `version`: as {@link page}. */
  summary(did: string, version: MailboxVersion, nowMs: number, read: () => SummaryEntry[]): SummaryEntry[] {
    const r = this.kept.get(did);
    if (r !== undefined && servable(r.summary, version, nowMs)) return this.hit(did, r, r.summary.value);
    this.misses++;
    const entries = read();
    const validUntilMs = earliest(entries.map((e) => e.expiresAtMs));
    const bytes = entries.length * ENTRY_OVERHEAD_BYTES;
    this.keep(did, { page: current(r?.page, version), summary: { value: entries, version, readAtMs: nowMs, validUntilMs, bytes } });
    return entries;
  }

  private hit<T>(did: string, r: RecipientReads, value: T): T {
    this.hits++;
    this.kept.delete(did);
    this.kept.set(did, r);
    return value;
  }

  /**
   * Replaces what is kept for `did` with `next`, then drops the least recently used beyond the bounds; false when
   * `next` is too large to keep.
   */
  private keep(did: string, next: RecipientReads): boolean {
    const size = bytesOf(next);
    if (this.limits.maxBytes === 0 || size > this.limits.maxBytes / 8) return false;
    this.drop(did);
    this.kept.set(did, next);
    this.bytes += size;
    for (const [oldest] of this.kept) {
      if (this.bytes <= this.limits.maxBytes && this.kept.size <= this.limits.maxRecipients) break;
      this.drop(oldest);
    }
    return true;
  }

  private drop(did: string): void {
    const r = this.kept.get(did);
    if (r === undefined) return;
    this.bytes -= bytesOf(r);
    this.kept.delete(did);
  }
}
