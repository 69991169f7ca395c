/**
 * The resolve cache's doorkeeper: remembers, in a fixed table of 32-bit string hashes, the DIDs that missed the
 * cache while it was full, so that a DID is admitted on its second miss, not its first. When the read set is far
 * larger than the cache (a uniform read over a million DIDs), nearly every miss is a DID that will not be read again
 * before it would be evicted: admitting it costs an insertion, an eviction and garbage for the collector, and
 * gains no hits. The table is direct-mapped (a newer DID overwrites an older one in its slot), so it forgets by
 * itself and holds no strings: its memory is the table's, 4 bytes a slot. Two DIDs of one hash are one DID to it
 * (the other is admitted a miss early: harmless).
 */
export class MissFilter {
  private readonly slots: Uint32Array;
  private readonly mask: number;

  /** `slots`: rounded up to a power of two (at least 1,024). */
  constructor(slots: number) {
    let n = 1024;
    while (n < slots && n < 2 ** 26) n *= 2;
    this.slots = new Uint32Array(n);
    this.mask = n - 1;
  }

  /** True when `key` was recorded since its slot last changed hands; records it otherwise. */
  seenBefore(key: string): boolean {
    const h = fnv1a(key);
    const i = (h ^ (h >>> 16)) & this.mask;
    if (this.slots[i] === h) {
      // admitted: the slot is free for another DID
      this.slots[i] = 0;
      return true;
    }
    this.slots[i] = h;
    return false;
  }
}

/** 32-bit FNV-1a of the string's UTF-16 code units, never 0 (0 marks an empty slot). */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0 || 1;
}
