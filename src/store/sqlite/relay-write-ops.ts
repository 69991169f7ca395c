/**
 * The Relay store's write operations as plain data, so they can be handed to its writer thread
 * (`relay-writer-worker.ts`) and run there by {@link relayOpRunner}.
 */
import type { NonceClaim } from '../../ports/nonce-registry.js';
import type { RelaySweepResult, StageOutcome, StageRequest } from '../../relay/staging-store.js';
import { opRunner, type OpRunner } from './op-writer.js';
import type { DeliveredKey, RelayWrites } from './relay-writes.js';

/** One write of the Relay's store. */
export type RelayWriteOp =
  | { kind: 'stage'; req: StageRequest }
  | { kind: 'result'; messageKey: string; contentHash: string; recipient: string; resultText: string; nowMs: number }
  | { kind: 'finish_set'; recipient: string; groupId: string; delivered: readonly DeliveredKey[]; resultText: string; nowMs: number }
  | { kind: 'claim'; claim: NonceClaim; nowMs: number }
  | { kind: 'sweep'; nowMs: number };

/** What each write of the Relay's store answers. */
export interface RelayWriteResults {
  stage: StageOutcome;
  result: void;
  finish_set: void;
  claim: boolean;
  sweep: RelaySweepResult & { more: boolean };
}

/** How the operations run on `writes`. A remembered result is bookkeeping: its commit needs no fsync of its own. */
export function relayOpRunner(writes: RelayWrites): OpRunner<RelayWriteOp, RelayWriteResults> {
  return opRunner<RelayWriteOp, RelayWriteResults>(
    {
      stage: (op) => writes.stage(op.req),
      result: (op) => writes.saveResult(op.messageKey, op.contentHash, op.recipient, op.resultText, op.nowMs),
      finish_set: (op) => writes.finishSet(op.recipient, op.groupId, op.delivered, op.resultText, op.nowMs),
      claim: (op) => writes.claim(op.claim, op.nowMs),
      sweep: (op) => writes.sweepStep(op.nowMs),
    },
    (op) => op.kind !== 'result',
  );
}

/** The bytes an operation holds (they count toward the writer's queue and batch bounds). */
export const relayOpBytes = (op: RelayWriteOp): number => (op.kind === 'stage' ? op.req.envelope.byteLength : 0);
