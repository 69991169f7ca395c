/**
 * The node's pino logger on stderr (stdout is reserved for the CLI's machine-readable output): JSON lines, or
 * readable lines through pino-pretty (`--log-format pretty`, the default when stderr is a terminal). Lines logged
 * through a request's logger (`ctx.log`, src/http/server.ts) carry its id (`reqId`).
 */
import { pino, type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { LogFormat, LogLevel } from './config.js';

/** How lines are written; `auto` is `pretty` when stderr is a terminal, else `json`. */
export interface LoggerOptions {
  format?: LogFormat;
  /** Whether stderr is a terminal (decides `auto`; default: `process.stderr.isTTY`). */
  stderrIsTTY?: boolean;
  /** Where JSON lines go instead of stderr (tests). */
  destination?: DestinationStream;
}

/** `json` or `pretty`, as `format` decides for this stderr. */
export function resolveLogFormat(format: LogFormat, stderrIsTTY: boolean): 'json' | 'pretty' {
  return format === 'auto' ? (stderrIsTTY ? 'pretty' : 'json') : format;
}

/**
 * Builds the root logger, writing synchronously to fd 2 so nothing is lost at exit. Request headers that may
 * carry credentials are redacted; node secrets are never passed to the logger.
 */
export function createLogger(level: LogLevel, options: LoggerOptions = {}): Logger {
  const tty = options.stderrIsTTY ?? process.stderr.isTTY === true;
  const stream: DestinationStream =
    resolveLogFormat(options.format ?? 'json', tty) === 'pretty'
      ? pretty({ destination: 2, sync: true, colorize: tty, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
      : (options.destination ?? pino.destination({ fd: 2, sync: true }));
  return pino(
    {
      level,
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' },
    },
    stream,
  );
}
