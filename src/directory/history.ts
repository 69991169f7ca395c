/**
 * The audit log of a DID, a persona or an application: every finalized operation on it, newest first, a page at
 * a time behind an opaque cursor (`GET /dids/{did}/history` and friends, docs/explorer.md). Built from the
 * ledger's transactions, which outlive the subject: a deleted DID's history stays readable.
 */
import { isoMs } from '../base/clock.js';
import { DdnError } from '../base/errors.js';
import type { BlockRef } from '../ledger/types.js';
import type { LedgerReads } from '../ledger/ports.js';
import { decodeExtrinsic } from '../ledger/extrinsic.js';
import type { TxPosition, TxRecord } from '../ledger/store.js';
import { isApplicationId } from '../protocol/payloads/application.js';
import type { PolicyScopeKind } from '../protocol/policy/types.js';
import { describeCall } from './history-changes.js';
import { assertDid, parsePersonaName } from './submission.js';
import type { ApplicationHistoryResponse, DidHistoryResponse, HistoryEntryJson, PersonaHistoryResponse } from '../wire/history.js';

export const HISTORY_PAGE = { defaultLimit: 20, maxLimit: 100 } as const;

/** One operation as the history routes render it (src/wire/history.ts). */
export type HistoryEntry = HistoryEntryJson;

/** A page of history: `next_cursor` is passed as `?cursor=` for the next (older) page; null on the last page. */
export type HistoryPage = Omit<DidHistoryResponse, 'did'>;

type Query = Record<string, string>;

const POLICY_CALLS = ['apply_policy_v2_with_proof', 'apply_policy_v3_with_proof'] as const;
const PERSONA_CALLS = ['apply_persona_with_proof', ...POLICY_CALLS];
const APPLICATION_CALLS = [
  'register_application',
  'update_application',
  'set_application_status',
  'set_application_domain',
  'set_application_linked_did',
  'apply_policy_v3_with_proof',
];

const badParam = (field: string, message: string) => new DdnError('invalid_request', message, { field });

export function encodeCursor(p: TxPosition): string {
  return Buffer.from(`${p.blockNumber}.${p.blockIndex}`).toString('base64url');
}

/** The position a cursor names (`invalid_request` for anything this node did not hand out). */
export function decodeCursor(cursor: string): TxPosition {
  const m = /^([0-9]{1,10})\.([0-9]{1,9})$/.exec(/^[A-Za-z0-9_-]{1,40}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('latin1') : '');
  if (m === null) throw badParam('cursor', 'cursor is not one this Directory handed out');
  return { blockNumber: Number(m[1]), blockIndex: Number(m[2]) };
}

/** `?cursor=&limit=`: limit 1…100 (default 20). */
export function parsePageQuery(query: Query): { before?: TxPosition; limit: number } {
  let limit: number = HISTORY_PAGE.defaultLimit;
  if (query.limit !== undefined) {
    if (!/^[0-9]{1,3}$/.test(query.limit) || Number(query.limit) < 1 || Number(query.limit) > HISTORY_PAGE.maxLimit) {
      throw badParam('limit', `limit must be an integer from 1 to ${HISTORY_PAGE.maxLimit}`);
    }
    limit = Number(query.limit);
  }
  return query.cursor === undefined ? { limit } : { before: decodeCursor(query.cursor), limit };
}

interface Subject {
  id: string;
  extrinsics?: readonly string[];
  /** The policy scope this subject's policy operations address. */
  scope: PolicyScopeKind;
  notFound: () => DdnError;
}

export class HistoryService {
  constructor(private readonly ledger: Pick<LedgerReads, 'subjectHistory' | 'finalizedRefNow' | 'blockRef'>) {}

  /** `GET /dids/{did}/history`. */
  did(did: string, query: Query): DidHistoryResponse {
    assertDid(did);
    const page = this.page({ id: did, scope: 'Did', notFound: () => new DdnError('did_not_found', 'DID not found', { did }) }, query);
    return { did, ...page };
  }

  /** `GET /personas/{persona}/history` (the name canonicalised). */
  persona(raw: string, query: Query): PersonaHistoryResponse {
    const persona = parsePersonaName(raw);
    const notFound = () => new DdnError('persona_not_found', 'persona not found', { persona });
    return { persona, ...this.page({ id: persona, extrinsics: PERSONA_CALLS, scope: 'Persona', notFound }, query) };
  }

  /** `GET /applications/{application_id}/history`. */
  application(id: string, query: Query): ApplicationHistoryResponse {
    if (!isApplicationId(id)) throw new DdnError('invalid_application_id', 'application id must be 1–64 characters of [a-z0-9._-]', { application_id: id });
    const notFound = () => new DdnError('application_not_found', 'application not found', { application_id: id });
    return { application_id: id, ...this.page({ id, extrinsics: APPLICATION_CALLS, scope: 'Application', notFound }, query) };
  }

  private page(s: Subject, query: Query): HistoryPage {
    const { before, limit } = parsePageQuery(query);
    const rows = this.rows(s, limit + 1, before);
    const examined = rows.slice(0, limit);
    const last = examined[examined.length - 1];
    const next = rows.length > limit && last !== undefined ? encodeCursor({ blockNumber: last.blockNumber!, blockIndex: last.blockIndex! }) : null;
    const blocks = new Map<number, BlockRef | undefined>();
    const history = examined.map((tx) => this.entry(tx, s.scope, blocks)).filter((e) => e !== undefined);
    if (history.length === 0 && next === null && (before === undefined || !this.exists(s))) throw s.notFound();
    return { history, next_cursor: next };
  }

  private rows(s: Subject, limit: number, before?: TxPosition): TxRecord[] {
    return this.ledger.subjectHistory({
      subject: s.id,
      ...(s.extrinsics === undefined ? {} : { extrinsics: s.extrinsics }),
      maxBlock: this.ledger.finalizedRefNow().number,
      ...(before === undefined ? {} : { before }),
      limit,
    });
  }

  /** Whether any operation about the subject is final (a cursor past the last page still names a known subject). */
  private exists(s: Subject): boolean {
    const blocks = new Map<number, BlockRef | undefined>();
    return this.rows(s, HISTORY_PAGE.maxLimit).some((tx) => this.entry(tx, s.scope, blocks) !== undefined);
  }

  /** The rendered entry; undefined for a policy operation on another kind of scope with the same id. */
  private entry(tx: TxRecord, scope: PolicyScopeKind, blocks: Map<number, BlockRef | undefined>): HistoryEntry | undefined {
    const call = tx.bytes === undefined ? undefined : decodeExtrinsic(tx.bytes);
    const details = call === undefined ? undefined : describeCall(call);
    if (details?.scope !== undefined && details.scope.kind !== scope) return undefined;
    const number = tx.blockNumber!;
    if (!blocks.has(number)) blocks.set(number, this.ledger.blockRef(number));
    const block = blocks.get(number);
    const timestamp = block?.timestampMs ?? tx.finishedAtMs ?? 0;
    return {
      block_number: number,
      block_hash: block?.hash ?? '',
      block_index: tx.blockIndex!,
      tx_hash: tx.txHash,
      timestamp,
      timestamp_iso: isoMs(timestamp),
      action: tx.meta.action,
      extrinsic: tx.extrinsic,
      signer_key_id: details?.signerKeyId ?? null,
      changes: details?.changes ?? null,
    };
  }
}
