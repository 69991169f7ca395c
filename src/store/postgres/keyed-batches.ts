/**
 * Group commit per key: operations submitted under one key (the PostgreSQL mailbox uses the recipient) run one
 * batch at a time — or up to `lanes` batches at a time, each lane one after another — and every operation that
 * arrives while the key's lanes are all busy joins the next batch; a batch waits for the end of the event-loop turn
 * in which its lane started, so the operations read in that turn start together. A runner is told its lane (0 …
 * lanes − 1; no two batches of a key run in one lane at once). Different keys never wait for each other here. A batch's runner answers each operation on its own (one
 * may fail while the others succeed); a runner that throws fails every operation of its batch. With `fillMs`, a
 * batch that follows another of its key first waits (that long at most) for the callers the previous one answered
 * to come back, so that closed-loop callers (a client sends its next operation when its last is answered) share a
 * batch rather than settle into two alternating half-size ones; `fillOps` limits the wait to small batches. The
 * wait follows every batch, also one that left none waiting (all its callers were in it), and a key idle after it
 * ends its drain only then.
 */

/** The answer to one operation of a batch. */
export type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown };

/** Every value as the answer of its operation (a batch that succeeded as a whole). */
export const settledAll = <R>(values: readonly R[]): Settled<R>[] => values.map((value) => ({ ok: true, value }));

/** Limits of one batch: a single larger operation still runs, alone. */
export interface BatchLimits {
  maxOps: number;
  maxBytes: number;
  /** Batches of one key in the database at once (default 1: one after another). */
  lanes?: number;
  /**
   * Fill: a batch that follows another of its key waits (up to this many ms) until as many operations wait as the
   * key had at a batch's end (that batch's and those that waited meanwhile: the callers it answers come back; the
   * most of its last few batches, so a caller late for one is waited for by the next), so callers that come back
   * one round trip later share a batch instead of splitting into two alternating half-size ones. Off (0) by
   * default; with one lane only.
   */
  fillMs?: number;
  /**
   * Fill: the most operations a batch waits for (default: no limit), so that only small batches wait — a batch this
   * large already spreads its fixed cost, and a process that keeps two such batches going (one in the database, the
   * next one filling while its callers are answered) should not be made to take turns.
   */
  fillOps?: number;
}

/** Batches of a key after which the fill's count of its callers falls to what the key holds (callers that left). */
const PEAK_BATCHES = 8;

/** A key's operations waiting, its batches running, and whether one is about to start (taking what arrives meanwhile). */
interface KeyQueue<T, R> {
  waiting: Waiting<T, R>[];
  /** The lanes running a batch (or about to). */
  busy: Set<number>;
  starting: boolean;
  /** Fill: the operations the key had at its last batch's end, and the wake-up of a batch waiting for them. */
  expect: number;
  /** Batches ended since `expect` was last reached (it falls to what the key holds after {@link PEAK_BATCHES}). */
  expectAge: number;
  wake: (() => void) | undefined;
}

interface Waiting<T, R> {
  item: T;
  bytes: number;
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

export class KeyedBatches<T, R> {
  /** Operations waiting per key; a key is present while its batches are running. */
  private readonly queues = new Map<string, KeyQueue<T, R>>();

  constructor(
    private readonly run: (key: string, items: readonly T[], lane: number) => Promise<Settled<R>[]>,
    private readonly limits: BatchLimits,
  ) {}

  /** Runs `item` in the next batch of `key`; resolves or rejects with its own answer once that batch is done. */
  submit(key: string, item: T, bytes: number): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const waiting = { item, bytes, resolve, reject };
      let queue = this.queues.get(key);
      if (queue === undefined) {
        queue = { waiting: [], busy: new Set(), starting: false, expect: 0, expectAge: 0, wake: undefined };
        this.queues.set(key, queue);
      }
      queue.waiting.push(waiting);
      if (queue.wake !== undefined && queue.waiting.length >= this.fillTarget(queue)) queue.wake();
      const lanes = this.limits.lanes ?? 1;
      if (queue.starting || queue.busy.size >= lanes) return;
      let lane = 0;
      while (queue.busy.has(lane)) lane++;
      queue.busy.add(lane);
      queue.starting = true;
      // a batch starts at the end of this event-loop turn: the stores of the key read in the same turn
      // (a Relay's sends arrive one request each) join it instead of each paying a transaction of its own
      const q = queue;
      setImmediate(() => void this.drain(key, q, lane));
    });
  }

  /** Runs batches of `key` one after another until its queue is empty (one lane of the key). */
  private async drain(key: string, queue: KeyQueue<T, R>, lane: number): Promise<void> {
    queue.starting = false;
    let first = true;
    for (;;) {
      // after a batch, the fill waits for its callers even when none waits yet (all of them were in it)
      if (!first) await this.fill(queue);
      if (queue.waiting.length === 0) break;
      first = false;
      const batch = this.take(queue.waiting);
      let answers: Settled<R>[];
      try {
        answers = await this.run(
          key,
          batch.map((w) => w.item),
          lane,
        );
      } catch (error) {
        answers = batch.map(() => ({ ok: false, error }));
      }
      batch.forEach((w, i) => {
        const a = answers[i] ?? { ok: false, error: new Error('the batch gave no answer for this operation') };
        if (a.ok) w.resolve(a.value);
        else w.reject(a.error);
      });
      this.expectNext(queue, batch.length + queue.waiting.length);
    }
    queue.busy.delete(lane);
    if (queue.busy.size === 0) this.queues.delete(key);
  }

  /**
   * The key's callers as the most operations it held at once (a batch's and those waiting at its end) over its last
   * {@link PEAK_BATCHES} batches: a caller still on its way back when a batch ends (in the HTTP layer, or answered
   * but not yet sent again) is not among those the key holds then, but it was at an earlier batch's end.
   */
  private expectNext(queue: KeyQueue<T, R>, held: number): void {
    if (held >= queue.expect || ++queue.expectAge >= PEAK_BATCHES) {
      queue.expect = held;
      queue.expectAge = 0;
    }
  }

  /** The operations a batch that follows another waits for: the key's at its last batch's end, within `fillOps`. */
  private fillTarget(queue: KeyQueue<T, R>): number {
    return Math.min(queue.expect, this.limits.fillOps ?? Infinity);
  }

  /** Waits (at most `fillMs`) until as many operations wait as the key had at its last batch's end. */
  private fill(queue: KeyQueue<T, R>): Promise<void> {
    const ms = this.limits.fillMs ?? 0;
    // one lane only: a key's lanes would share its one wake-up
    if (ms <= 0 || (this.limits.lanes ?? 1) > 1 || queue.waiting.length >= this.fillTarget(queue)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => done(), ms);
      // a key that fell idle waits here with nothing queued: that alone keeps no process up
      timer.unref();
      const done = () => {
        clearTimeout(timer);
        queue.wake = undefined;
        resolve();
      };
      queue.wake = done;
    });
  }

  /** The next batch from the head of `queue`, within the limits (at least one operation). */
  private take(queue: Waiting<T, R>[]): Waiting<T, R>[] {
    let n = 1;
    let bytes = queue[0]!.bytes;
    while (n < queue.length && n < this.limits.maxOps && bytes + queue[n]!.bytes <= this.limits.maxBytes) bytes += queue[n++]!.bytes;
    return queue.splice(0, n);
  }
}
