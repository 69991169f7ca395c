/** The resolve response (http-api.md §3.1) built from a finalized record plus pool markers (§2.3). */
import { isoMs } from '../base/clock.js';
import { to0x } from '../base/bytes.js';
import type { PoolEntry } from '../ledger/types.js';
import type { DidRecord } from '../ledger/records.js';
import { documentToJson } from '../protocol/document.js';
import type { DidRecordResponse, PendingOperationJson } from '../wire/directory.js';

export type PendingOperation = PendingOperationJson;

export function pendingOperationsOf(entries: readonly PoolEntry[], subject: string): PendingOperation[] {
  return entries
    .filter((e) => e.tx.meta.subject === subject)
    .map((e) => ({
      action: e.tx.meta.action,
      nonce_domain: e.tx.meta.nonceDomain ?? null,
      nonce: e.tx.meta.nonce ?? null,
      tx_hash: e.tx.txHash,
      submitted_at: isoMs(e.tx.submittedAtMs),
    }));
}

/** The resolve body without its block fields (what the resolve cache keeps, src/directory/resolve-cache.ts). */
export type DidRecordPart = Omit<DidRecordResponse, 'block_number' | 'block_hash'>;

/** The resolve body of a DID with a finalized record, without the finalized block's number and hash (added after). */
export function renderDidRecordPart(did: string, rec: DidRecord, documentNonce: bigint, pending: PendingOperation[]): DidRecordPart {
  const docPending = pending.filter((p) => p.nonce_domain === 'document_nonce');
  const latest = docPending[docPending.length - 1];
  const out: Omit<DidRecordResponse, 'pending_operations' | 'block_number' | 'block_hash'> = {
    did,
    owner: null,
    aliases: rec.aliases ? [...rec.aliases] : [],
    devices: (rec.devices ?? []).map((d) => ({ deviceId: d.deviceId, addedAt: d.addedAt, tombstoned: d.tombstoned })),
    version: rec.version,
    document: rec.document ? documentToJson(rec.document) : null,
    updatedAt: rec.updatedAt,
    freshness: 'finalized',
    registration_status: 'confirmed',
    root_pubkey: to0x(rec.rootPubkey),
    deactivated: rec.deactivated,
    document_nonce: documentNonce.toString(),
    pending_document_action: latest !== undefined,
  };
  if (rec.registrationTx) out.tx_id = rec.registrationTx;
  if (latest) {
    out.pending_document_nonce = latest.nonce;
    out.pending_document_action_name = latest.action;
    out.pending_extrinsic_hash = latest.tx_hash;
    out.pending_document_submitted_at = latest.submitted_at;
  }
  return { ...out, pending_operations: pending };
}
