/** A pending `UpdateService` row numbered `i` (its own subject and hash), for the bench tools that admit rows directly. */
import { randomBytes } from 'node:crypto';
import type { TxRecord } from '../src/ledger/store.js';

export function pendingTx(i: number, bytes: number, signatureBytes?: number): TxRecord {
  const subject = `did:platform:${i}`;
  return {
    txHash: `0x${i.toString(16).padStart(64, '0')}`,
    extrinsic: 'update_document',
    status: 'pending',
    submittedAtMs: Date.now(),
    meta: { subject, action: 'UpdateService', nonceDomain: 'document_nonce', nonce: '1', limitKey: `${subject}|document_nonce` },
    bytes: randomBytes(bytes),
    ...(signatureBytes === undefined ? {} : { signatures: randomBytes(signatureBytes) }),
  };
}
