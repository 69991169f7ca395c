/** The deadlines of every request a `ddn` command makes: `--connect-timeout`, `--answer-timeout`, and the fetch built from them. */
import { deadlineFetch } from '../client/deadline-fetch.js';
import type { FetchLike } from '../client/http.js';
import { UsageError } from './usage-error.js';

/** The deadlines of every request a command makes (`--connect-timeout`, `--answer-timeout`). */
export interface DeadlineValues {
  'connect-timeout'?: string;
  'answer-timeout'?: string;
}

/** `--connect-timeout` and `--answer-timeout` in milliseconds. */
export function deadlines(o: DeadlineValues): { connectTimeoutMs: number; answerTimeoutMs: number } {
  const ms = (name: keyof DeadlineValues, fallback: string): number => {
    const n = Number(o[name] ?? fallback);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number of seconds`);
    return Math.round(n * 1000);
  };
  return { connectTimeoutMs: ms('connect-timeout', '10'), answerTimeoutMs: ms('answer-timeout', '30') };
}

/**
 * The fetch of a command's requests to `name` (`the Relay`): the deadlines of `o`, a stderr line through `info`
 * while a request waits longer than 5 s, and an end to every request when `stop` aborts (Ctrl-C). A deadline that
 * passes fails the request with `request_timeout` (exit 3) naming the URL.
 */
export function commandFetch(o: DeadlineValues, name: string, info: ((line: string) => void) | undefined, stop?: AbortSignal): FetchLike {
  return deadlineFetch({
    ...deadlines(o),
    name,
    noticeAfterMs: Math.min(5_000, Math.ceil(deadlines(o).answerTimeoutMs / 2)),
    ...(stop === undefined ? {} : { signal: stop }),
    ...(info === undefined
      ? {}
      : { onWait: (w) => info(`waiting for ${w.name} at ${w.url} (${Math.round(w.waitedMs / 1000)} s; gives up after ${Math.round(w.deadlineMs / 1000)} s)`) }),
  });
}

/** The deadlines of every request; in DIRECTORY_OPTIONS, so every command that talks to a node has them. */
export const DEADLINE_OPTIONS = {
  'connect-timeout': {
    type: 'string',
    arg: 'SECONDS',
    help: 'give up on a request that has not connected (DNS, TCP, TLS) within this',
    env: 'DDN_CONNECT_TIMEOUT',
    default: '10',
  },
  'answer-timeout': {
    type: 'string',
    arg: 'SECONDS',
    help: 'give up on a request whose answer has not begun (or stalls) for this long',
    env: 'DDN_ANSWER_TIMEOUT',
    default: '30',
  },
} as const;

/**
 * What `--help` of every command with these options says of a node that does not answer: the worst case of one
 * request, and that a Directory or Cache request is not tried again.
 */
export const DEADLINE_HELP =
  'A node that does not answer: each request gives up after --connect-timeout (10 s) to connect plus\n' +
  '--answer-timeout (30 s) for its answer, naming the URL on stderr once it waited 5 s; Directory and Cache\n' +
  'requests are not tried again, so a hung Directory ends the command within 40 s (exit 3).\n';
