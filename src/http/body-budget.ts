/**
 * The memory a process gives to request bodies in flight (docs/public-node.md, "Request bodies in flight"). A body
 * is held whole until its request is answered (the Relay and the Cache verify signatures over the whole envelope,
 * so a body cannot be streamed through), so the bytes every open request may still deliver are reserved before any
 * is read: a body announced by `Content-Length` reserves that length at once, a chunked one reserves its bytes as
 * they arrive. Beyond the process's total a body is refused with 503 `service_unavailable` (`details.reason`
 * `body_budget`), beyond one client address's share with 429 `rate_limited` (`details.reason` `body_share`), both
 * with `Retry-After` and before the refused bytes are read. A reservation is given back when its response ends
 * (answered, failed or the connection closed), so a slow body holds its share only while it is open.
 *
 * One budget is shared by every listener of a process, like the connection caps; addresses are keyed as the rate
 * limits key them (IPv6 per /64).
 *
 * Small bodies announced by `Content-Length` (up to 64 KiB: acknowledgements, registrations) may go an eighth beyond the total, so a flood of large
 * bodies that fills it does not stop them.
 *
 * A body's bytes are freed only when V8 collects the objects holding them, and an idle process collects nothing:
 * after a burst (bodies in flight fell to a quarter of a peak of at least {@link COLLECT_AFTER_BYTES}) one full
 * collection gives the memory back to the system.
 */
import { collector } from '../base/collector.js';
import { DdnError } from '../base/errors.js';

/** The budget's bounds, in bytes; 0: no bound. */
export interface BodyBudgetSettings {
  /** Bytes of bodies in flight in the process, every listener together. */
  maxBytes: number;
  /** Bytes of bodies in flight from one client address (IPv6: one /64). */
  maxBytesPerAddress: number;
}

/**
 * The defaults: ten Relay bodies of the largest size (25 MiB) at once in the process, two and a half from one
 * address; far above an honest sender's (a large file travels as 2 MiB chunks, a few at a time).
 */
export const DEFAULT_BODY_BUDGET: Readonly<BodyBudgetSettings> = Object.freeze({
  maxBytes: 256 * 1024 * 1024,
  maxBytesPerAddress: 64 * 1024 * 1024,
});

/** `Retry-After` of a refused body: bodies in flight end within seconds, or within the request timeout. */
export const BODY_BUDGET_RETRY_AFTER_SECONDS = 5;

/**
 * Bodies announced at most this size (acknowledgements, registrations, most Directory changes) may use
 * {@link SMALL_BODY_HEADROOM} of the total beyond the budget, so a flood of large bodies does not stop them.
 */
export const SMALL_BODY_BYTES = 64 * 1024;
/** The share of the total small bodies may use on top of it. */
const SMALL_BODY_HEADROOM = 1 / 8;

/** A burst of bodies at least this large is collected once it has ended. */
export const COLLECT_AFTER_BYTES = 64 * 1024 * 1024;
/** Releases within this of the burst's end are collected together. */
const COLLECT_DELAY_MS = 200;

/** The bytes one request holds; given back once by {@link release}. */
export interface BodyReservation {
  /**
   * Reserves `bytes` more — a body's whole announced length (`whole`), or a chunked body's next bytes — or answers
   * the refusal when they do not fit.
   */
  grow(bytes: number, whole?: boolean): DdnError | undefined;
  /** Gives every reserved byte back; later calls do nothing. */
  release(): void;
}

/** The process's bodies in flight, by client address. */
export class BodyBudget {
  private held = 0;
  /** The most bytes held since the last collection. */
  private peak = 0;
  private collecting: NodeJS.Timeout | undefined;
  private readonly byAddress = new Map<string, number>();
  /** Bodies refused so far (metrics, tests), by reason. */
  readonly refusals = { body_budget: 0, body_share: 0 };
  /** Collections made after a burst (tests). */
  collections = 0;

  /** `collect`: V8's full collection by default; null: never collect. */
  constructor(
    private readonly settings: Readonly<BodyBudgetSettings>,
    private readonly collect: (() => void) | null = collector(),
  ) {}

  /** Bytes reserved now, in total. */
  get heldBytes(): number {
    return this.held;
  }

  /** Bytes reserved now by one address key. */
  heldBy(key: string): number {
    return this.byAddress.get(key) ?? 0;
  }

  /** A reservation of `bytes` (a whole body) for the address `key`, or the refusal when they do not fit. */
  reserve(key: string, bytes: number): BodyReservation | DdnError {
    const refused = this.take(key, bytes, true);
    return refused ?? this.reservation(key, bytes);
  }

  /** An empty reservation for the address `key`, to grow as its body's bytes are announced or arrive. */
  open(key: string): BodyReservation {
    return this.reservation(key, 0);
  }

  private reservation(key: string, bytes: number): BodyReservation {
    let mine = bytes;
    let released = false;
    return {
      grow: (more, whole = false) => {
        if (released) return undefined;
        const e = this.take(key, more, whole);
        if (e === undefined) mine += more;
        return e;
      },
      release: () => {
        if (released) return;
        released = true;
        this.give(key, mine);
      },
    };
  }

  /** `whole`: `bytes` is a whole body (only an announced small body may use the headroom). */
  private take(key: string, bytes: number, whole: boolean): DdnError | undefined {
    if (bytes <= 0) return undefined;
    const { maxBytes, maxBytesPerAddress } = this.settings;
    const own = this.byAddress.get(key) ?? 0;
    if (maxBytesPerAddress > 0 && own + bytes > maxBytesPerAddress) {
      this.refusals.body_share++;
      return new DdnError('rate_limited', 'too many request bytes in flight from this client address; retry later', {
        reason: 'body_share',
        limit_bytes: maxBytesPerAddress,
        retry_after_seconds: BODY_BUDGET_RETRY_AFTER_SECONDS,
      });
    }
    const total = whole && bytes <= SMALL_BODY_BYTES ? maxBytes * (1 + SMALL_BODY_HEADROOM) : maxBytes;
    if (maxBytes > 0 && this.held + bytes > total) {
      this.refusals.body_budget++;
      return new DdnError('service_unavailable', 'too many request bytes in flight; retry later', {
        reason: 'body_budget',
        retry_after_seconds: BODY_BUDGET_RETRY_AFTER_SECONDS,
      });
    }
    this.held += bytes;
    if (this.held > this.peak) this.peak = this.held;
    this.byAddress.set(key, own + bytes);
    return undefined;
  }

  private give(key: string, bytes: number): void {
    if (bytes <= 0) return;
    this.held -= bytes;
    const left = (this.byAddress.get(key) ?? bytes) - bytes;
    if (left <= 0) this.byAddress.delete(key);
    else this.byAddress.set(key, left);
    if (this.collect !== null && this.collecting === undefined && this.peak >= COLLECT_AFTER_BYTES && this.held <= this.peak / 4) {
      this.collecting = setTimeout(() => {
        this.collecting = undefined;
        this.peak = this.held;
        this.collections++;
        this.collect?.();
      }, COLLECT_DELAY_MS);
      this.collecting.unref();
    }
  }
}
