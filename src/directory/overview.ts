/**
 * `GET /overview` (docs/explorer.md): how many DIDs, personas and applications the finalized ledger holds, and
 * its latest operations and blocks. The counts are the export feed's tally (src/ledger/feed, kept by the ledger
 * store as each block commits: DIDs registered less those deleted, deletions, personas and applications
 * registered, every transaction) at the finalized block, and the operations the feed's newest entries: a few
 * indexed reads whatever the ledger's size, the first request as every later one.
 */
import { isoMs } from '../base/clock.js';
import { DdnError } from '../base/errors.js';
import type { LedgerReads } from '../ledger/ports.js';
import type { FeedSummaryTx as SummaryTx } from '../ledger/store.js';
import type { OverviewResponse, RecentOperationJson, SubjectKind } from '../wire/explorer.js';
import { kindNeedsBytes, subjectKindOf } from './subject-kind.js';

export const OVERVIEW_LIST = { defaultLimit: 10, maxLimit: 100 } as const;

/** `?limit=`: 1…100, default 10. */
export function parseOverviewLimit(raw: string | undefined): number {
  if (raw === undefined) return OVERVIEW_LIST.defaultLimit;
  if (!/^[0-9]{1,3}$/.test(raw) || Number(raw) < 1 || Number(raw) > OVERVIEW_LIST.maxLimit) {
    throw new DdnError('invalid_request', `limit must be an integer from 1 to ${OVERVIEW_LIST.maxLimit}`, { field: 'limit' });
  }
  return Number(raw);
}

export class OverviewService {
  constructor(private readonly ledger: LedgerReads) {}

  overview(query: Record<string, string>): OverviewResponse {
    const limit = parseOverviewLimit(query.limit);
    // all read in one turn: the same finalized block for the counts, the operations and the blocks
    const t = this.ledger.finalizedFeedTally();
    const fin = this.ledger.finalizedRefNow();
    const timestamps = new Map<number, number>();
    const timeOf = (n: number): number => {
      if (!timestamps.has(n)) timestamps.set(n, this.ledger.blockRef(n)?.timestampMs ?? 0);
      return timestamps.get(n)!;
    };
    const recent_operations: RecentOperationJson[] = this.ledger.finalizedLatestFeed(limit).flatMap(({ tx, blockNumber }) =>
      tx === undefined
        ? []
        : [
            {
              block_number: blockNumber,
              block_index: tx.blockIndex,
              tx_hash: tx.txHash,
              timestamp: timeOf(blockNumber),
              timestamp_iso: isoMs(timeOf(blockNumber)),
              action: tx.action,
              extrinsic: tx.extrinsic,
              success: tx.status === 'included',
              subject: tx.subject,
              subject_kind: this.kindOf(tx),
            },
          ],
    );
    const recent_blocks: OverviewResponse['recent_blocks'] = [];
    for (let n = fin.number; n >= 0 && recent_blocks.length < limit; n--) {
      const b = this.ledger.blockRef(n);
      if (b === undefined) break;
      recent_blocks.push({ number: n, hash: b.hash, timestamp: b.timestampMs, timestamp_iso: isoMs(b.timestampMs), operations: this.ledger.blockTxCount(n) });
    }
    return {
      finalized_number: fin.number,
      head_number: this.ledger.headRef().number,
      counts: { dids: t.dids, deleted_dids: t.deletedDids, personas: t.personas, applications: t.applications, operations: t.operations },
      recent_operations,
      recent_blocks,
    };
  }

  /** The kind of a summary's subject: a policy call's comes from its signed scope, so that one reads its bytes. */
  private kindOf(tx: SummaryTx): SubjectKind {
    const bytes = kindNeedsBytes(tx.extrinsic) ? this.ledger.txView(tx.txHash)?.tx.bytes : undefined;
    return subjectKindOf({ extrinsic: tx.extrinsic, meta: { subject: tx.subject }, bytes });
  }
}
