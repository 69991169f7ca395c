/**
 * Several base URLs of one service (scaled-out Directory processes): a request goes first to the base that last
 * answered and, on a connection failure, a timeout or a 5xx, to the next, once around the list. Any answer below
 * 500 ends the request, whatever its status: a clean 404 from one process is the answer, not a reason to ask
 * another. The I/O is the caller's (`send`); this only orders the attempts and remembers the base that worked.
 */
import type { Logger } from 'pino';

/** What one base did: an answer with a 5xx `status`, or a thrown `error` (refused, timed out, unreadable). */
export interface FailedAttempt {
  base: string;
  status?: number;
  error?: string;
}

/** Every base failed: the attempts in order, and the last 5xx answer or the last thrown error. */
export class FailoverExhausted<R> extends Error {
  constructor(
    readonly attempts: readonly FailedAttempt[],
    readonly last: { answer: R } | { error: unknown },
  ) {
    super(`no base answered (${attempts.map((a) => `${a.base}: ${a.error ?? `HTTP ${a.status}`}`).join('; ')})`);
    this.name = 'FailoverExhausted';
  }
}

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** Base URLs without a trailing slash, in order, duplicates dropped; at least one. */
export function normalizeBases(urls: string | readonly string[]): string[] {
  const out: string[] = [];
  for (const u of typeof urls === 'string' ? [urls] : urls) {
    const base = u.replace(/\/+$/, '');
    if (!out.includes(base)) out.push(base);
  }
  if (out.length === 0) throw new Error('at least one base URL is needed');
  return out;
}

export class BaseFailover {
  readonly bases: readonly string[];
  private preferred = 0;

  constructor(
    urls: string | readonly string[],
    private readonly logger?: Logger,
  ) {
    this.bases = Object.freeze(normalizeBases(urls));
  }

  /** The base the next request starts at: the one that last answered (the first until one did). */
  get current(): string {
    return this.bases[this.preferred]!;
  }

  /**
   * Calls `send` with each base in turn, from {@link current}, until one resolves with a status below 500; that
   * answer is returned and its base remembered. Throws {@link FailoverExhausted} when every base failed.
   */
  async send<R extends { status: number }>(send: (base: string) => Promise<R>): Promise<R> {
    const attempts: FailedAttempt[] = [];
    let last: { answer: R } | { error: unknown } = { error: new Error('no attempt') };
    const start = this.preferred;
    for (let k = 0; k < this.bases.length; k++) {
      const i = (start + k) % this.bases.length;
      const base = this.bases[i]!;
      try {
        const answer = await send(base);
        if (answer.status < 500) {
          if (i !== this.preferred) {
            this.logger?.info({ base, previous: this.bases[this.preferred] }, 'switched to another base URL');
            this.preferred = i;
          }
          return answer;
        }
        attempts.push({ base, status: answer.status });
        last = { answer };
      } catch (error) {
        attempts.push({ base, error: errorText(error) });
        last = { error };
      }
      if (k + 1 < this.bases.length) this.logger?.warn({ failed: attempts.at(-1) }, 'base URL failed; trying the next');
    }
    throw new FailoverExhausted(attempts, last);
  }
}
