/**
 * The Cache mailbox's write operations as plain data, so they can be handed to the writer thread
 * (`mailbox-writer-worker.ts`) and run there by {@link runMailboxWriteOp}; errors cross back as data too.
 */
import { DdnError, type ErrorCode, type ErrorDetails } from '../../base/errors.js';
import type { PutRequest } from '../../cache/mailbox-store.js';
import type { NonceClaim } from '../../ports/nonce-registry.js';
import type { MailboxWrites } from './mailbox-writes.js';

/** One write of the mailbox. */
export type MailboxWriteOp =
  | { kind: 'put'; req: PutRequest }
  | { kind: 'claim'; claim: NonceClaim; nowMs: number }
  | { kind: 'release'; claim: NonceClaim }
  | { kind: 'ack'; did: string; messageIds: readonly string[]; nowMs: number; claim: NonceClaim }
  | { kind: 'sweep'; nowMs: number };

/** Runs `op` on `writes` (inside the writer's transaction). */
export function runMailboxWriteOp(writes: MailboxWrites, op: MailboxWriteOp): unknown {
  switch (op.kind) {
    case 'put':
      return writes.put(op.req);
    case 'claim':
      return writes.claim(op.claim, op.nowMs);
    case 'release':
      return writes.release(op.claim);
    case 'ack':
      return writes.ack(op.did, op.messageIds, op.nowMs, op.claim);
    case 'sweep':
      return writes.sweepStep(op.nowMs);
  }
}

/** An error as it crosses the thread boundary: a coded error keeps its code and details. */
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
export type WriterRequest =
  | { type: 'batch'; ops: { id: number; op: MailboxWriteOp }[] }
  | { type: 'close' };

/** One answered operation. */
export type WriterAnswer = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: WireError };

/** Writer thread → main thread. */
export type WriterReply =
  | { type: 'done'; answers: WriterAnswer[]; stats: { commits: number; operations: number; checkpointerThread: boolean; cacheKib: number } }
  | { type: 'batch_error'; error: WireError }
  | { type: 'closed' };
