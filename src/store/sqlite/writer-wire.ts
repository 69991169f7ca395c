/**
 * What crosses between a store and its writer thread (`worker-writer.ts` ↔ `writer-thread.ts`): batches of
 * operations as plain data one way, answers and errors as data the other. A coded error keeps its code and details.
 */
import { DdnError, type ErrorCode, type ErrorDetails } from '../../base/errors.js';

/** An error as it crosses the thread boundary. */
export interface WireError {
  code?: ErrorCode;
  message: string;
  details?: ErrorDetails;
}

export function toWireError(err: unknown): WireError {
  if (err instanceof DdnError) return { code: err.code, message: err.message, ...(err.details === undefined ? {} : { details: err.details }) };
  return { message: err instanceof Error ? err.message : String(err) };
}

export function fromWireError(w: WireError): Error {
  return w.code === undefined ? new Error(w.message) : new DdnError(w.code, w.message, w.details);
}

/** Main thread → writer thread. */
export type WriterRequest<Op> = { type: 'batch'; ops: { id: number; op: Op }[] } | { type: 'close' };

/** One answered operation. */
export type WriterAnswer = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: WireError };

/** What a writer thread reports of itself with every answer: its commits, and whatever else its store shows. */
export interface WriterThreadStats {
  commits: number;
  operations: number;
  info: Readonly<Record<string, number | boolean>>;
}

/** Writer thread → main thread. */
export type WriterReply = { type: 'done'; answers: WriterAnswer[]; stats: WriterThreadStats } | { type: 'batch_error'; error: WireError } | { type: 'closed' };
