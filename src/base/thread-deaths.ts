/**
 * The one supervision rule of this code base's worker threads (the SQLite writers, the Ed25519 verifier): a
 * thread that dies is replaced, but more than `maxDeaths` deaths within `windowMs` mean it cannot run, and the
 * owner gives up on threads (fails its writes, or verifies on the pool) instead of restarting one forever.
 */
export class ThreadDeaths {
  private readonly deaths: number[] = [];

  constructor(
    private readonly maxDeaths: number,
    private readonly windowMs: number,
  ) {}

  /** Records a death at `nowMs`; true while a replacement may still be started. */
  record(nowMs: number): boolean {
    this.deaths.push(nowMs);
    while (this.deaths.length > 0 && this.deaths[0]! <= nowMs - this.windowMs) this.deaths.shift();
    return this.deaths.length <= this.maxDeaths;
  }

  /** The pause before the next replacement: `baseMs`, doubled for each earlier death in the window. */
  backoffMs(baseMs: number): number {
    return baseMs * 2 ** Math.max(0, this.deaths.length - 1);
  }
}
