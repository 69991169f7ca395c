/**
 * The Relay store's write operations as plain data, so they can be handed to its writer thread
 * (`relay-writer-worker.ts`) and run there by {@link relayOpRunner}.
 */
import type { NonceClaim } from '../../ports/nonce-registry.js';
import type { StageRequest } from '../../relay/staging-store.js';
import type { OpRunner } from './op-writer.js';
import type { DeliveredKey, RelayWrites } from './relay-writes.js';

/** One write of the Relay's store. */
export type RelayWriteOp =
  | { kind: 'stage'; req: StageRequest }
  | { kind: 'result'; messageKey: string; contentHash: string; recipient: string; resultText: string; nowMs: number }
  | { kind: 'finish_set'; recipient: string; groupId: string; delivered: readonly DeliveredKey[]; resultText: string; nowMs: number }
  | { kind: 'claim'; claim: NonceClaim; nowMs: number }
  | { kind: 'sweep'; nowMs: number };

/** How the operations run on `writes`. A remembered result is bookkeeping: its commit needs no fsync of its own. */
export function relayOpRunner(writes: RelayWrites): OpRunner<RelayWriteOp> {
  return {
    run(op) {
      switch (op.kind) {
        case 'stage':
          return writes.stage(op.req);
        case 'result':
          return writes.saveResult(op.messageKey, op.contentHash, op.recipient, op.resultText, op.nowMs);
        case 'finish_set':
          return writes.finishSet(op.recipient, op.groupId, op.delivered, op.resultText, op.nowMs);
        case 'claim':
          return writes.claim(op.claim, op.nowMs);
        case 'sweep':
          return writes.sweepStep(op.nowMs);
      }
    },
    sync: (op) => op.kind !== 'result',
  };
}

/** The bytes an operation holds (they count toward the writer's queue and batch bounds). */
export const relayOpBytes = (op: RelayWriteOp): number => (op.kind === 'stage' ? op.req.envelope.byteLength : 0);
