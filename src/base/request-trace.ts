/**
 * The request a piece of work is done for, passed explicitly (no async-context storage): its id, which
 * node-to-node calls pass on as `X-Request-Id`, and its logger, whose lines carry the id (`reqId`).
 */
import type { BaseLogger } from 'pino';

/** What work done for a request logs through (a pino logger, or fastify's request logger). */
export type TraceLogger = Pick<BaseLogger, 'error' | 'warn' | 'info' | 'debug'>;

export interface RequestTrace {
  readonly id: string;
  readonly log: TraceLogger;
}
