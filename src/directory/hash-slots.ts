/**
 * An open-addressing index of small integer ids by a 32-bit hash, in two typed arrays (linear probing; deletion by
 * backward shift, so no tombstones). It holds no key: the caller walks the ids stored under a hash and compares
 * each with its own key ({@link HashSlots.first}, {@link HashSlots.next}). A lookup touches no JavaScript object,
 * and a million ids are two arrays to the garbage collector, not a million entries.
 */
export class HashSlots {
  /** id + 1 per slot (0: empty). */
  private ids: Int32Array;
  /** The hash each slot's id was added under. */
  private hashes: Int32Array;
  private mask: number;
  private count = 0;

  /** Room for `capacity` ids before the first growth (the table is kept at most half full). */
  constructor(capacity = 32) {
    let n = 64;
    while (n < capacity * 2) n *= 2;
    this.ids = new Int32Array(n);
    this.hashes = new Int32Array(n);
    this.mask = n - 1;
  }

  get size(): number {
    return this.count;
  }

  /** Memory of the table. */
  get byteLength(): number {
    return this.ids.byteLength + this.hashes.byteLength;
  }

  /** The first slot holding an id added under `hash`, or -1; walk on with {@link next}. */
  first(hash: number): number {
    return this.scan(hash & this.mask, hash | 0);
  }

  /** The next slot after `slot` holding an id added under `hash`, or -1. */
  next(slot: number, hash: number): number {
    return this.scan((slot + 1) & this.mask, hash | 0);
  }

  /** The id in `slot` (one {@link first} or {@link next} returned). */
  idAt(slot: number): number {
    return this.ids[slot]! - 1;
  }

  add(hash: number, id: number): void {
    if ((this.count + 1) * 2 > this.ids.length) this.grow();
    this.place(hash | 0, id + 1);
    this.count++;
  }

  /** Removes `id`, added under `hash`; false when it is not held. */
  remove(hash: number, id: number): boolean {
    for (let s = this.first(hash); s >= 0; s = this.next(s, hash)) {
      if (this.ids[s] !== id + 1) continue;
      this.removeAt(s);
      return true;
    }
    return false;
  }

  clear(): void {
    this.ids.fill(0);
    this.count = 0;
  }

  private scan(slot: number, hash: number): number {
    const { ids, hashes, mask } = this;
    for (let s = slot; ids[s] !== 0; s = (s + 1) & mask) if (hashes[s] === hash) return s;
    return -1;
  }

  private place(hash: number, value: number): void {
    let s = hash & this.mask;
    while (this.ids[s] !== 0) s = (s + 1) & this.mask;
    this.ids[s] = value;
    this.hashes[s] = hash;
  }

  /** Empties `slot` and moves back the ids after it that would no longer be found past the hole. */
  private removeAt(slot: number): void {
    const { ids, hashes, mask } = this;
    let hole = slot;
    for (let s = (slot + 1) & mask; ids[s] !== 0; s = (s + 1) & mask) {
      const home = hashes[s]! & mask;
      // an id whose home lies cyclically in (hole, s] is still reachable: leave it
      const reachable = hole <= s ? hole < home && home <= s : hole < home || home <= s;
      if (reachable) continue;
      ids[hole] = ids[s]!;
      hashes[hole] = hashes[s]!;
      hole = s;
    }
    ids[hole] = 0;
    this.count--;
  }

  private grow(): void {
    const { ids, hashes } = this;
    this.ids = new Int32Array(ids.length * 2);
    this.hashes = new Int32Array(ids.length * 2);
    this.mask = this.ids.length - 1;
    for (let s = 0; s < ids.length; s++) if (ids[s] !== 0) this.place(hashes[s]!, ids[s]!);
  }
}
