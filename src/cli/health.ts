/** `ddn health`: is a node up and ready? Waits for it with `--wait` (scripts that start `ddn serve &` need that). */
import { memberOf, messageOf } from '../base/guards.js';
import { leaf } from './command.js';
import { DEFAULT_DIRECTORY_URL, DIRECTORY_OPTIONS, timeoutMs } from './common.js';

const ROLES = ['directory', 'relay', 'cache'] as const;
const POLL_MS = 200;

/** The answer of one role's `GET /ready`. */
interface ReadyAnswer {
  url: string;
  ok: boolean;
  status?: number;
  body?: unknown;
  error?: string;
}

/** `not ready: directory at URL (ECONNREFUSED), …`: each role not ready and why (the last answer). */
function notReady(waiting: readonly (readonly [string, ReadyAnswer])[]): string {
  return `not ready: ${waiting.map(([r, a]) => `${r} at ${a.url} (${a.error ?? `HTTP ${a.status}`})`).join(', ')}`;
}

/** A role that did not become ready within `--wait` (exit 3). */
class NotReadyError extends Error {
  readonly code = 'wait_timeout';
  readonly details: Record<string, ReadyAnswer>;
  constructor(waiting: readonly (readonly [string, ReadyAnswer])[]) {
    super(notReady(waiting));
    this.name = 'NotReadyError';
    this.details = Object.fromEntries(waiting);
  }
}

/** GET /ready of `url`: its status and body, or the reason it could not be asked. */
async function ready(url: string): Promise<Omit<ReadyAnswer, 'url'>> {
  try {
    const res = await fetch(`${url.replace(/\/+$/, '')}/ready`, { signal: AbortSignal.timeout(5_000) });
    const body: unknown = await res.json().catch(() => undefined);
    return { ok: res.status === 200, status: res.status, body };
  } catch (e) {
    const cause = memberOf(e, 'cause');
    return { ok: false, error: String(memberOf(cause, 'code') ?? memberOf(cause, 'message') ?? messageOf(e)) };
  }
}

/** The `health` command. */
export const healthCommand = leaf('ddn health', {
  summary: 'check that nodes answer GET /ready (with --wait: wait until they do)',
  synopsis: '[--directory URL] [--relay URL] [--cache URL] [--wait SECONDS]',
  description:
    `Asks GET /ready of the Directory (--directory, default ${DEFAULT_DIRECTORY_URL}) and of the Relay and Cache\n` +
    'URLs given, and prints each answer. A role is ready when it answers 200 (a Relay or Cache also needs its\n' +
    'Directory). With --wait it asks again every 0.2 s until all are ready or the seconds have passed (exit 3);\n' +
    "without it, a role that is not ready fails the command (exit 1). 'ddn serve … &' followed by\n" +
    "'ddn health --wait 30' starts a node in the background and waits until it serves.",
  options: {
    directory: DIRECTORY_OPTIONS.directory,
    relay: { type: 'string', arg: 'URL', help: 'a Relay to check too' },
    cache: { type: 'string', arg: 'URL', help: 'a Cache to check too' },
    wait: { type: 'string', arg: 'SECONDS', help: 'wait until every role is ready, at most this long' },
  },
  async run(ctx, o) {
    const urls = Object.fromEntries(ROLES.flatMap((r) => (o[r] === undefined ? [] : [[r, o[r]!]])));
    const deadline = o.wait === undefined ? undefined : Date.now() + timeoutMs(o.wait);
    for (;;) {
      const answers = Object.fromEntries(await Promise.all(Object.entries(urls).map(async ([role, url]) => [role, { url, ...(await ready(url)) }] as const)));
      const waiting = Object.entries(answers).filter(([, a]) => !a.ok);
      if (waiting.length === 0) return { ready: true, ...answers };
      if (deadline === undefined)
        throw Object.assign(new Error(notReady(waiting)), {
          code: 'not_ready',
          details: answers,
        });
      if (Date.now() >= deadline) throw new NotReadyError(waiting);
      ctx.progress({ ready: false, waiting_for: waiting.map(([r]) => r) });
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  },
});
