/**
 * The Cache mailbox's write operations as plain data, so they can be handed to the writer thread
 * (`mailbox-writer-worker.ts`) and run there by {@link mailboxOpRunner}.
 */
import type { PutRequest, PutResult, SweepResult } from '../../cache/mailbox-store.js';
import type { NonceClaim } from '../../ports/nonce-registry.js';
import type { MailboxWrites } from './mailbox-writes.js';
import { opRunner, type OpRunner } from './op-writer.js';

/** One write of the mailbox. */
export type MailboxWriteOp =
  | { kind: 'put'; req: PutRequest }
  | { kind: 'claim'; claim: NonceClaim; nowMs: number }
  | { kind: 'release'; claim: NonceClaim }
  | { kind: 'ack'; did: string; messageIds: readonly string[]; nowMs: number; claim: NonceClaim }
  | { kind: 'sweep'; nowMs: number };

/** What each mailbox write answers. */
export interface MailboxWriteResults {
  put: PutResult;
  claim: boolean;
  release: void;
  ack: string[];
  sweep: SweepResult & { more: boolean };
}

/** How the operations run on `writes` (inside the writer's transaction); every one is synced. */
export function mailboxOpRunner(writes: MailboxWrites): OpRunner<MailboxWriteOp, MailboxWriteResults> {
  return opRunner<MailboxWriteOp, MailboxWriteResults>({
    put: (op) => writes.put(op.req),
    claim: (op) => writes.claim(op.claim, op.nowMs),
    release: (op) => writes.release(op.claim),
    ack: (op) => writes.ack(op.did, op.messageIds, op.nowMs, op.claim),
    sweep: (op) => writes.sweepStep(op.nowMs),
  });
}

/** The bytes an operation holds (they count toward the writer's queue and batch bounds). */
export const mailboxOpBytes = (op: MailboxWriteOp): number => (op.kind === 'put' ? op.req.entry.envelope.byteLength : 0);
