/**
 * `GET /overview` (docs/explorer.md): how many DIDs, personas and applications the finalized ledger holds, and
 * its latest operations and blocks. The ledger keeps no counts, so they are folded from the export feed (every
 * finalized operation in order, src/ledger/feed) read as summaries — position, status, action, subject, no
 * extrinsic bytes: the first request reads the whole feed, a page at a time with the event loop free between
 * pages, and each later one only what was finalized since. Per process, in memory.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { isoMs } from '../base/clock.js';
import { DdnError } from '../base/errors.js';
import type { LedgerReads } from '../ledger/ports.js';
import type { FeedSummaryTx as SummaryTx } from '../ledger/store.js';
import type { OverviewResponse, RecentOperationJson, SubjectKind } from '../wire/explorer.js';
import { kindNeedsBytes, subjectKindOf } from './subject-kind.js';

export const OVERVIEW_LIST = { defaultLimit: 10, maxLimit: 100 } as const;
const FEED_PAGE = 5000;
const PERSONA_REGISTRATIONS = new Set(['register_persona', 'register_named_persona']);

/** `?limit=`: 1…100, default 10. */
export function parseOverviewLimit(raw: string | undefined): number {
  if (raw === undefined) return OVERVIEW_LIST.defaultLimit;
  if (!/^[0-9]{1,3}$/.test(raw) || Number(raw) < 1 || Number(raw) > OVERVIEW_LIST.maxLimit) {
    throw new DdnError('invalid_request', `limit must be an integer from 1 to ${OVERVIEW_LIST.maxLimit}`, { field: 'limit' });
  }
  return Number(raw);
}

/** The running totals of the feed read so far. */
export class OverviewTally {
  seq = 0;
  dids = 0;
  deletedDids = 0;
  applications = 0;
  operations = 0;
  readonly personas = new Set<string>();
  /** The latest operations, oldest first, at most {@link OVERVIEW_LIST.maxLimit}. */
  readonly recent: { tx: SummaryTx; blockNumber: number }[] = [];

  add(tx: SummaryTx, blockNumber: number): void {
    this.operations++;
    this.recent.push({ tx, blockNumber });
    if (this.recent.length > OVERVIEW_LIST.maxLimit) this.recent.shift();
    if (tx.status !== 'included') return;
    const action = tx.action;
    if (action === 'register_did') this.dids++;
    else if (action === 'delete_did') {
      this.dids--;
      this.deletedDids++;
    } else if (action === 'register_application') this.applications++;
    else if (PERSONA_REGISTRATIONS.has(action)) this.personas.add(tx.subject);
  }
}

export class OverviewService {
  private readonly tally = new OverviewTally();
  private catchingUp: Promise<void> | undefined;

  constructor(private readonly ledger: LedgerReads) {}

  async overview(query: Record<string, string>): Promise<OverviewResponse> {
    const limit = parseOverviewLimit(query.limit);
    await this.catchUp();
    const t = this.tally;
    const fin = this.ledger.finalizedRefNow();
    const timestamps = new Map<number, number>();
    const timeOf = (n: number): number => {
      if (!timestamps.has(n)) timestamps.set(n, this.ledger.blockRef(n)?.timestampMs ?? 0);
      return timestamps.get(n)!;
    };
    const recent_operations: RecentOperationJson[] = t.recent
      .slice(-limit)
      .reverse()
      .map(({ tx, blockNumber }) => ({
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
      }));
    const recent_blocks: OverviewResponse['recent_blocks'] = [];
    for (let n = fin.number; n >= 0 && recent_blocks.length < limit; n--) {
      const b = this.ledger.blockRef(n);
      if (b === undefined) break;
      recent_blocks.push({ number: n, hash: b.hash, timestamp: b.timestampMs, timestamp_iso: isoMs(b.timestampMs), operations: this.ledger.blockTxCount(n) });
    }
    return {
      finalized_number: fin.number,
      head_number: this.ledger.headRef().number,
      counts: { dids: t.dids, deleted_dids: t.deletedDids, personas: t.personas.size, applications: t.applications, operations: t.operations },
      recent_operations,
      recent_blocks,
    };
  }

  /** The kind of a summary's subject: a policy call's comes from its signed scope, so that one reads its bytes. */
  private kindOf(tx: SummaryTx): SubjectKind {
    const bytes = kindNeedsBytes(tx.extrinsic) ? this.ledger.txView(tx.txHash)?.tx.bytes : undefined;
    return subjectKindOf({ extrinsic: tx.extrinsic, meta: { subject: tx.subject }, bytes });
  }

  /** Folds what was finalized since the last request; concurrent requests share one pass. */
  private catchUp(): Promise<void> {
    if (this.catchingUp === undefined) {
      const pass = this.fold();
      this.catchingUp = pass;
      void pass
        .finally(() => {
          if (this.catchingUp === pass) this.catchingUp = undefined;
        })
        .catch(() => undefined);
    }
    return this.catchingUp;
  }

  private async fold(): Promise<void> {
    for (;;) {
      const page = this.ledger.finalizedFeedSummary(this.tally.seq, FEED_PAGE);
      for (const e of page) {
        this.tally.seq = e.seq;
        if (e.tx !== undefined) this.tally.add(e.tx, e.blockNumber);
      }
      if (page.length < FEED_PAGE) return;
      await yieldToLoop();
    }
  }
}
