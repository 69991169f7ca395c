/**
 * Who runs event work when (docs/public-node.md, "Event rules and amplification"): a node processes several events
 * at once, and each policy owner's rule runs one at a time. A rule's owner writes its plan and controls its Call
 * endpoint, so a run can take the Call's whole 10 s; before, events ran one at a time per process and such an
 * owner held every other owner's events behind its own.
 */

/**
 * At most `max` holders at once; the others wait in order. A waiter marked `first` (work resuming after it stepped
 * aside, see {@link OwnerLanes}) goes before the waiters that have not started.
 */
export class Slots {
  private held = 0;
  private readonly resuming: (() => void)[] = [];
  private readonly starting: (() => void)[] = [];

  constructor(private max: number) {}

  /** Takes a slot: at once when one is free, else once one is handed on. */
  take(first = false): Promise<void> {
    if (this.held < this.max) {
      this.held++;
      return Promise.resolve();
    }
    return new Promise((resolve) => (first ? this.resuming : this.starting).push(resolve));
  }

  /** Gives a slot back, or hands it to the next waiter. */
  release(): void {
    const next = this.resuming.shift() ?? this.starting.shift();
    if (next === undefined) this.held--;
    else next();
  }

  /** Slots held now. */
  get taken(): number {
    return this.held;
  }

  /** Lifts the bound (the owner is stopping): every waiter gets a slot now, and so does every later {@link take}. */
  open(): void {
    this.max = Number.POSITIVE_INFINITY;
    for (const next of [...this.resuming.splice(0), ...this.starting.splice(0)]) {
      this.held++;
      next();
    }
  }
}

/** One run at a time per owner; at most `maxWaiting` of an owner's runs wait behind the one running. */
export class OwnerLanes {
  /** Per owner with a run going: the turns of the runs waiting behind it. */
  private readonly lanes = new Map<string, (() => void)[]>();

  constructor(private readonly maxWaiting: number) {}

  /**
   * Enters `owner`'s lane: `undefined` when the lane was free (the caller's turn now), a promise of the caller's
   * turn when a run is going, or `null` (nothing entered) when {@link maxWaiting} already wait. A caller that
   * entered calls {@link leave} once its run ended.
   */
  enter(owner: string): Promise<void> | undefined | null {
    const waiting = this.lanes.get(owner);
    if (waiting === undefined) {
      this.lanes.set(owner, []);
      return undefined;
    }
    if (waiting.length >= this.maxWaiting) return null;
    return new Promise((resolve) => waiting.push(resolve));
  }

  /** Ends the running turn of `owner`: the next waiting run's turn begins. */
  leave(owner: string): void {
    const waiting = this.lanes.get(owner);
    const next = waiting?.shift();
    if (next === undefined) this.lanes.delete(owner);
    else next();
  }
}
