/** Time source, injected everywhere so pure rules take `now` as a parameter. */
export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private ms: number) {}
  nowMs(): number {
    return this.ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** `YYYY-MM-DDTHH:MM:` texts of recently formatted minutes (a store writes two: now and the expiry). */
const minutePrefixes = new Map<number, string>();
const MAX_MINUTES = 256;

/**
 * `new Date(ms).toISOString()`, at a fraction of its cost: V8 formats dates with `snprintf`, which made up a
 * noticeable part of a Cache summary (two timestamps per item). A minute's text is kept and only seconds and
 * milliseconds are written.
 */
export function isoMs(ms: number): string {
  const minute = Math.floor(ms / 60_000);
  const prefix = minutePrefixes.get(minute);
  if (prefix === undefined || !Number.isInteger(ms)) {
    const text = new Date(ms).toISOString();
    // years outside 0000–9999 are written with a sign and six digits
    if (text.length === 24 && Number.isInteger(ms)) {
      if (minutePrefixes.size >= MAX_MINUTES) minutePrefixes.clear();
      minutePrefixes.set(minute, text.slice(0, 17));
    }
    return text;
  }
  const rest = ms - minute * 60_000;
  const s = Math.floor(rest / 1000);
  const milli = rest - s * 1000;
  return `${prefix}${s < 10 ? '0' : ''}${s}.${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}

/** ISO-8601 UTC with seconds precision and `Z` (node-request and retrieval-proof timestamps). */
export function isoSeconds(ms: number): string {
  return isoMs(Math.floor(ms / 1000) * 1000).replace('.000Z', 'Z');
}
