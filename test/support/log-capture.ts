/** The node's JSON logger writing into an array instead of stderr, for tests that look at log lines. */
import type { Logger } from 'pino';
import { createLogger } from '../../src/app/logger.js';
import type { LogLevel } from '../../src/app/config.js';

/** One parsed JSON log line. */
export type LogLine = Record<string, unknown>;

export interface LogCapture {
  logger: Logger;
  /** Every line written so far, parsed, in order. */
  lines: LogLine[];
  /** The lines with message `msg`. */
  withMsg(msg: string): LogLine[];
}

export function captureLogs(level: LogLevel = 'info'): LogCapture {
  const lines: LogLine[] = [];
  const logger = createLogger(level, { format: 'json', destination: { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) } });
  return { logger, lines, withMsg: (msg) => lines.filter((l) => l.msg === msg) };
}
