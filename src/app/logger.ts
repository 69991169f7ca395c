/** The node's pino logger: JSON lines on stderr (stdout is reserved for the CLI's machine-readable output). */
import { pino, type Logger } from 'pino';
import type { LogLevel } from './config.js';

/**
 * Builds the root logger, writing synchronously to fd 2 so nothing is lost at exit. Request headers that may
 * carry credentials are redacted; node secrets are never passed to the logger.
 */
export function createLogger(level: LogLevel): Logger {
  return pino(
    {
      level,
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' },
    },
    pino.destination({ fd: 2, sync: true }),
  );
}
