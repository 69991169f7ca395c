/** The size of the ledger file's SQLite page cache (`--ledger-cache-bytes`; the cache itself: sqlite/ledger-file.ts). */

const MIB = 1024 * 1024;

/** The least `--ledger-cache-bytes` takes. */
export const MIN_LEDGER_CACHE_BYTES = MIB;

/**
 * The default: 256 MiB, or a sixteenth of the memory the process may use when that is less (`memoryBytes`: the
 * machine's, or its cgroup's limit — src/base/process-memory.ts; whole MiB, at least
 * {@link MIN_LEDGER_CACHE_BYTES}). 256 MiB holds the indexes a registration inserts into at random at a
 * million DIDs and the history index (about 205 MiB); SQLite fills it only with pages it reads, so a small ledger
 * never takes it.
 */
export function defaultLedgerCacheBytes(memoryBytes: number): number {
  return Math.max(MIN_LEDGER_CACHE_BYTES, Math.min(256 * MIB, Math.floor(memoryBytes / 16 / MIB) * MIB));
}
