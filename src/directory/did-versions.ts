/**
 * A DID's versions for W3C resolution (docs/api.md "W3C DID Resolution"): the finalized record now, or as it was
 * at a `versionId` or `versionTime`, read from the ledger's history — the blocks of the DID's transactions
 * (`subjectHistory`) and the state as of each (`stateAt`). A deleted DID's versions stay readable.
 */
import type { LedgerReads } from '../ledger/ports.js';
import { getDidRecord } from '../ledger/records.js';
import type { TxPosition } from '../ledger/store.js';
import { documentMetadata, type RecordVersion, type W3cDocumentMetadata } from './did-document-w3c.js';
import { ResolutionError } from './did-resolution.js';

/** A version of the record, or the deletion that ended one. */
export type HistoryStep = ({ kind: 'version' } & RecordVersion) | { kind: 'deleted'; atMs: number };

/** What resolution found. */
export type Found =
  { kind: 'version'; version: RecordVersion; metadata: W3cDocumentMetadata } | { kind: 'deleted'; atMs: number; createdMs: number | undefined };

const PAGE = 100;

/** The steps in order, oldest first, from the record as of each block holding one of its transactions. */
export function stepsOf(blocks: readonly { atMs: () => number; read: () => RecordVersion['record'] | undefined }[]): HistoryStep[] {
  const steps: HistoryStep[] = [];
  for (const b of blocks) {
    const record = b.read();
    const last = steps[steps.length - 1];
    if (record === undefined) {
      if (last?.kind === 'version') steps.push({ kind: 'deleted', atMs: b.atMs() });
      continue;
    }
    // a block whose transactions about the DID left its record as it was (a policy write, a failed change)
    if (last?.kind === 'version' && last.record.version === record.version && last.record.updatedAt === record.updatedAt) continue;
    steps.push({ kind: 'version', record, atMs: record.updatedAt });
  }
  return steps;
}

/**
 * The step a request selects, by index: the newest version numbered `versionId`, or the last step in force at
 * `versionTime` (Unix seconds; a version counts from the second it was made in). -1: none.
 */
export function selectStep(steps: readonly HistoryStep[], q: { versionId?: number | undefined; versionTime?: number | undefined }): number {
  for (let i = steps.length - 1; i >= 0; i--) {
    const s = steps[i]!;
    if (q.versionId !== undefined ? s.kind === 'version' && s.record.version === q.versionId : Math.floor(s.atMs / 1000) <= q.versionTime!) return i;
  }
  return -1;
}

/** The metadata of the selected step: created (its incarnation's first version), the next step if any. */
export function metadataAt(steps: readonly HistoryStep[], i: number): Found {
  const s = steps[i]!;
  if (s.kind === 'deleted') return { kind: 'deleted', atMs: s.atMs, createdMs: i > 0 ? createdOf(steps, i - 1) : undefined };
  const next = steps[i + 1];
  const nextStep = next === undefined ? undefined : { atMs: next.atMs, ...(next.kind === 'version' ? { versionId: next.record.version } : {}) };
  return { kind: 'version', version: s, metadata: documentMetadata(s, createdOf(steps, i), nextStep) };
}

/** When the incarnation holding version step `i` was registered (after any earlier deletion). */
function createdOf(steps: readonly HistoryStep[], i: number): number {
  let first = i;
  while (first > 0 && steps[first - 1]!.kind === 'version') first--;
  return steps[first]!.atMs;
}

export class DidVersions {
  constructor(private readonly ledger: LedgerReads) {}

  /** The finalized record now, or at `versionId` / `versionTime`; NOT_FOUND when there is none. */
  find(did: string, q: { versionId?: number | undefined; versionTime?: number | undefined }): Found {
    if (q.versionId === undefined && q.versionTime === undefined) return this.current(did);
    const steps = this.steps(did);
    const i = selectStep(steps, q);
    if (i < 0) throw new ResolutionError('NOT_FOUND', q.versionId !== undefined ? `no version ${q.versionId}` : 'the DID did not exist at versionTime');
    return metadataAt(steps, i);
  }

  private current(did: string): Found {
    const record = getDidRecord(this.ledger.finalizedView(), did);
    const max = this.ledger.finalizedRefNow().number;
    if (record === undefined) {
      const [last] = this.ledger.subjectHistory({ subject: did, maxBlock: max, limit: 1 });
      if (last === undefined) throw new ResolutionError('NOT_FOUND', 'the DID is not registered (or its registration is not final yet)');
      // deleted: the history says when and since when
      const steps = this.steps(did);
      return metadataAt(steps, steps.length - 1);
    }
    const reg = record.registrationTx === undefined ? undefined : this.ledger.txView(record.registrationTx);
    const createdMs = reg !== undefined && reg.status !== 'pending' ? reg.block?.timestampMs : undefined;
    return { kind: 'version', version: { record, atMs: record.updatedAt }, metadata: documentMetadata({ record, atMs: record.updatedAt }, createdMs) };
  }

  /** Every step of the DID's finalized history, oldest first. */
  private steps(did: string): HistoryStep[] {
    const max = this.ledger.finalizedRefNow().number;
    const numbers: number[] = [];
    let before: TxPosition | undefined;
    for (;;) {
      const rows = this.ledger.subjectHistory({ subject: did, maxBlock: max, limit: PAGE, ...(before === undefined ? {} : { before }) });
      for (const r of rows) if (numbers[numbers.length - 1] !== r.blockNumber) numbers.push(r.blockNumber!);
      const last = rows[rows.length - 1];
      if (rows.length < PAGE || last === undefined) break;
      before = { blockNumber: last.blockNumber!, blockIndex: last.blockIndex! };
    }
    const blocks = numbers.reverse().map((number) => ({
      atMs: () => this.ledger.blockRef(number)?.timestampMs ?? 0,
      read: () => getDidRecord(this.ledger.stateAt(number), did),
    }));
    return stepsOf(blocks);
  }
}
