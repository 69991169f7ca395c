/** `ddn mirror`: a read-only mirror of a Directory (docs/mirrors.md), until SIGTERM/SIGINT. */
import { memberOf, messageOf } from '../base/guards.js';
import { EXIT, EXIT_HELP } from './exit-codes.js';
import { parseArgs } from 'node:util';
import { configHelp, envNameOf, metricsTokenProblem, rateLimitSettings, type LogLevel } from '../app/config.js';
import { createLogger } from '../app/logger.js';
import { startMirror } from '../app/mirror.js';
import { DataDirError } from '../app/node-keys.js';
import { DEFAULT_FOLLOWER_LIMITS, type FollowerLimits } from '../mirror/follower.js';
import { DEFAULT_FEED_STREAM_LIMITS, type FeedStreamLimits } from '../directory/export-stream.js';
import { DEFAULT_BODY_BUDGET, type BodyBudgetSettings } from '../http/body-budget.js';
import { DEFAULT_CONNECTION_SETTINGS, type ConnectionSettings } from '../http/connections.js';
import type { RateLimitSettings } from '../http/rate-limit.js';
import type { CliCommand, CliIo } from './io.js';
import { listeningLine } from './serve.js';

/**
 * The defaults of the options that are not limits (those are the follower's and the export stream's own
 * constants): the help text shows them and {@link parseMirrorArgs} takes them, so they are written once.
 */
export const MIRROR_DEFAULTS = Object.freeze({ dataDir: './.ddn-mirror', host: '127.0.0.1', port: 8080, logLevel: 'info' as LogLevel });

const D = MIRROR_DEFAULTS;
const F = DEFAULT_FOLLOWER_LIMITS;
const S = DEFAULT_FEED_STREAM_LIMITS;
const C = DEFAULT_CONNECTION_SETTINGS;
const B = DEFAULT_BODY_BUDGET;

/** The rate-limit options a mirror takes, as ddn serve's: its routes are reads (writes are refused, counted as a node counts them). */
const RATE_LIMIT_OPTIONS = ['rate-limit', 'rate-limit-read', 'rate-limit-max-keys', 'trusted-proxies'] as const;

const USAGE = `usage: ddn mirror --from DIRECTORY_URL [options]

Follows a Directory's export feed, verifies every block and signature into its own SQLite ledger, and serves the
Directory's read routes from it (writes answer 403 read_only_mirror with the primary's URL).

  --from URL          the primary Directory's base URL (required; env DDN_MIRROR_FROM)
  --data-dir PATH     where the mirror keeps its ledger (default ${D.dataDir}; env DDN_DATA_DIR)
  --host HOST         interface to listen on (default ${D.host}; env DDN_HOST)
  --port N            port to listen on, 0 for any (default ${D.port}; env DDN_PORT)
  --log-level LEVEL   fatal, error, warn, info, debug, trace or silent (default ${D.logLevel}; env DDN_LOG_LEVEL)
  --metrics-token T   bearer token GET /metrics asks for (16+ visible characters); without one /metrics is open
                      on a loopback --host and 403 elsewhere (env DDN_METRICS_TOKEN)
  --max-line-bytes N  the largest feed line taken; a larger one does not verify (default ${F.maxLineBytes}; env
                      DDN_MAX_LINE_BYTES)
  --max-block-bytes N the most bytes of feed lines one block may take; a larger block does not verify (default
                      ${F.maxBlockBytes}; env DDN_MAX_BLOCK_BYTES)
  --handshake-timeout-ms MS  the primary must answer the stream's upgrade within this, else it is tried again
                      (default ${F.handshakeTimeoutMs}; env DDN_HANDSHAKE_TIMEOUT_MS)
  --ping-interval-ms MS  pings the primary this often; a connection that brought nothing (no line, no pong) for
                      this long is dropped and opened again (default ${F.pingIntervalMs}; env DDN_PING_INTERVAL_MS)
  --export-stream-max-sessions N, --export-stream-max-sessions-per-address N, --export-stream-ping-interval-ms MS
                      the mirror's own GET /export/stream, as ddn serve's (defaults ${S.maxSessions}, ${S.maxSessionsPerAddress}, ${S.pingIntervalMs}; env
                      DDN_EXPORT_STREAM_MAX_SESSIONS, …)
  --max-connections N, --max-connections-per-address N
                      open connections of the mirror and of one client address, as ddn serve's (beyond: 503 and
                      closed; 0: no cap; defaults ${C.maxConnections}, ${C.maxConnectionsPerAddress}; env DDN_MAX_CONNECTIONS, …)
  --http-body-budget-bytes N, --http-body-budget-per-address-bytes N
                      request bodies in flight in the mirror and from one client address, as ddn serve's (beyond:
                      503 / 429 before the body is read; 0: no bound; defaults ${B.maxBytes}, ${B.maxBytesPerAddress};
                      env DDN_HTTP_BODY_BUDGET_BYTES, …)

Request rate limits, as ddn serve's (a mirror's routes are reads: the \`read\` budget, per client address; beyond it
429 rate_limited with Retry-After):
${configHelp(RATE_LIMIT_OPTIONS)}
  --help              this text

${EXIT_HELP}
`;

const LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

interface MirrorArgs {
  from: string;
  dataDir: string;
  host: string;
  port: number;
  logLevel: LogLevel;
  metricsToken: string | null;
  followerLimits: FollowerLimits;
  streamLimits: Pick<FeedStreamLimits, 'maxSessions' | 'maxSessionsPerAddress' | 'pingIntervalMs'>;
  connectionCaps: Pick<ConnectionSettings, 'maxConnections' | 'maxConnectionsPerAddress'>;
  bodyBudget: BodyBudgetSettings;
  /** null: off. */
  rateLimits: RateLimitSettings | null;
}

/** The integer option `--name` (flag, else env, else the default); throws the message saying what is wrong. */
function intOption(value: string | undefined, name: string, fallback: number, min: number, max: number): number {
  const text = value ?? String(fallback);
  const n = /^[0-9]{1,16}$/.test(text) ? Number(text) : NaN;
  if (Number.isSafeInteger(n) && n >= min && n <= max) return n;
  throw new Error(`--${name}: must be an integer from ${min} to ${max}, got '${text}'`);
}

type MirrorLimits = Pick<MirrorArgs, 'followerLimits' | 'streamLimits' | 'connectionCaps' | 'bodyBudget' | 'rateLimits'>;

/** The follower's, the export stream's and the listener's limits from the options, else the environment; throws naming a bad one. */
function mirrorLimits(values: Record<string, string | string[] | boolean | undefined>, env: NodeJS.ProcessEnv): MirrorLimits {
  const opt = (name: string): string | undefined => {
    const v = values[name];
    return typeof v === 'string' ? v : undefined;
  };
  /** A cap or budget as ddn serve takes it: the flag, else `DDN_<NAME>`, else the default; 0 is no bound. */
  const bound = (name: string, fallback: number): number => intOption(opt(name) ?? env[envNameOf(name)], name, fallback, 0, Number.MAX_SAFE_INTEGER);
  const rateFlags = RATE_LIMIT_OPTIONS.flatMap((name) => {
    const v = values[name];
    return (Array.isArray(v) ? v : typeof v === 'string' ? [v] : []).map((x) => `--${name}=${x}`);
  });
  return {
    rateLimits: rateLimitSettings(rateFlags, env),
    connectionCaps: {
      maxConnections: bound('max-connections', C.maxConnections),
      maxConnectionsPerAddress: bound('max-connections-per-address', C.maxConnectionsPerAddress),
    },
    bodyBudget: {
      maxBytes: bound('http-body-budget-bytes', B.maxBytes),
      maxBytesPerAddress: bound('http-body-budget-per-address-bytes', B.maxBytesPerAddress),
    },
    streamLimits: {
      maxSessions: intOption(
        opt('export-stream-max-sessions') ?? env.DDN_EXPORT_STREAM_MAX_SESSIONS,
        'export-stream-max-sessions',
        S.maxSessions,
        1,
        1_000_000,
      ),
      maxSessionsPerAddress: intOption(
        opt('export-stream-max-sessions-per-address') ?? env.DDN_EXPORT_STREAM_MAX_SESSIONS_PER_ADDRESS,
        'export-stream-max-sessions-per-address',
        S.maxSessionsPerAddress,
        1,
        1_000_000,
      ),
      pingIntervalMs: intOption(
        opt('export-stream-ping-interval-ms') ?? env.DDN_EXPORT_STREAM_PING_INTERVAL_MS,
        'export-stream-ping-interval-ms',
        S.pingIntervalMs,
        100,
        600_000,
      ),
    },
    followerLimits: {
      ...F,
      maxLineBytes: intOption(opt('max-line-bytes') ?? env.DDN_MAX_LINE_BYTES, 'max-line-bytes', F.maxLineBytes, 1024, 1 << 30),
      maxBlockBytes: intOption(opt('max-block-bytes') ?? env.DDN_MAX_BLOCK_BYTES, 'max-block-bytes', F.maxBlockBytes, 1024, 2 ** 40),
      handshakeTimeoutMs: intOption(opt('handshake-timeout-ms') ?? env.DDN_HANDSHAKE_TIMEOUT_MS, 'handshake-timeout-ms', F.handshakeTimeoutMs, 1, 600_000),
      pingIntervalMs: intOption(opt('ping-interval-ms') ?? env.DDN_PING_INTERVAL_MS, 'ping-interval-ms', F.pingIntervalMs, 1, 600_000),
    },
  };
}

/** The options, or a message saying which one is wrong. */
export function parseMirrorArgs(args: string[], env: NodeJS.ProcessEnv): MirrorArgs | { help: true } | { error: string } {
  let values;
  try {
    values = parseArgs({
      args,
      strict: true,
      options: {
        from: { type: 'string' },
        'data-dir': { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        'log-level': { type: 'string' },
        'metrics-token': { type: 'string' },
        'max-line-bytes': { type: 'string' },
        'max-block-bytes': { type: 'string' },
        'handshake-timeout-ms': { type: 'string' },
        'ping-interval-ms': { type: 'string' },
        'export-stream-max-sessions': { type: 'string' },
        'export-stream-max-sessions-per-address': { type: 'string' },
        'export-stream-ping-interval-ms': { type: 'string' },
        'max-connections': { type: 'string' },
        'max-connections-per-address': { type: 'string' },
        'http-body-budget-bytes': { type: 'string' },
        'http-body-budget-per-address-bytes': { type: 'string' },
        ...Object.fromEntries(RATE_LIMIT_OPTIONS.map((name) => [name, { type: 'string', multiple: name === 'trusted-proxies' } as const])),
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
  if (values.help === true) return { help: true };
  const from = (values.from ?? env.DDN_MIRROR_FROM ?? '').replace(/\/+$/, '');
  if (from === '') return { error: '--from is required' };
  try {
    const u = new URL(from);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
  } catch {
    return { error: `--from: not an http(s) URL: '${from}'` };
  }
  const portText = values.port ?? env.DDN_PORT ?? String(D.port);
  const port = Number(portText);
  if (!/^[0-9]{1,5}$/.test(portText) || port > 65535) return { error: `--port: not a port number: '${portText}'` };
  const logLevel = (values['log-level'] ?? env.DDN_LOG_LEVEL ?? D.logLevel) as LogLevel;
  if (!LEVELS.includes(logLevel)) return { error: `--log-level: one of ${LEVELS.join(', ')}` };
  const metricsToken = values['metrics-token'] ?? env.DDN_METRICS_TOKEN ?? null;
  const tokenProblem = metricsToken === null ? undefined : metricsTokenProblem(metricsToken);
  if (tokenProblem !== undefined) return { error: `--metrics-token: ${tokenProblem}` };
  let limits: MirrorLimits;
  try {
    limits = mirrorLimits(values, env);
  } catch (e) {
    return { error: messageOf(e) };
  }
  const dataDir = values['data-dir'] ?? env.DDN_DATA_DIR ?? D.dataDir;
  return { from, dataDir, host: values.host ?? env.DDN_HOST ?? D.host, port, logLevel, metricsToken, ...limits };
}

async function mirror(args: string[], io: CliIo): Promise<number> {
  const parsed = parseMirrorArgs(args, io.env);
  if ('help' in parsed) {
    io.stdout(USAGE);
    return EXIT.ok;
  }
  if ('error' in parsed) {
    io.stderr(`ddn mirror: ${parsed.error}\nrun 'ddn mirror --help' for the options\n`);
    return EXIT.usage;
  }
  const signal = io.shutdownSignal();
  let running;
  try {
    running = await startMirror({ ...parsed, logger: createLogger(parsed.logLevel) });
  } catch (err) {
    if (!(err instanceof DataDirError) && !(err instanceof Error && typeof memberOf(err, 'syscall') === 'string')) throw err;
    io.stderr(`ddn mirror: ${err.message}\n`);
    return 1;
  }
  io.stdout(listeningLine({ directory: running.url }));
  await signal;
  await running.close();
  return 0;
}

/** The `mirror` command. */
export const mirrorCommand: CliCommand = { summary: 'run a read-only mirror of a Directory', run: mirror };
