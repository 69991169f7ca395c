/** Mailbox entries for store tests: one recipient, a fixed clock, 1-hour expiry by default. */
import { randomUUID } from 'node:crypto';
import type { NewEntry } from '../../src/cache/mailbox-store.js';

export const DID = 'did:platform:2222222222222222';
export const OTHER = 'did:platform:3333333333333333';
export const NOW = 1_800_000_000_000;
export const HOUR = 3_600_000;

/** A new entry (its envelope `{message_id, to}` unless `body` is given), fields overridable. */
export function entry(over: Partial<NewEntry> & { body?: string } = {}): NewEntry {
  const { body, ...rest } = over;
  const messageId = rest.messageId ?? randomUUID();
  const envelope = Buffer.from(body ?? JSON.stringify({ message_id: messageId, to: rest.recipientDid ?? DID }));
  return {
    messageId,
    recipientDid: DID,
    contentHash: `hash-${messageId.toLowerCase()}`,
    storedAtMs: NOW,
    expiresAtMs: NOW + HOUR,
    maxTtlSeconds: 172_800,
    appliedTtlSeconds: 3_600,
    tag: null,
    applicationId: null,
    chunk: null,
    sizeBytes: envelope.length,
    provenance: null,
    envelope,
    ...rest,
  };
}
