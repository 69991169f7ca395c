/** Mailbox entries for store tests: one recipient, a fixed clock, 1-hour expiry by default. */
import { randomUUID } from 'node:crypto';
import type { ChunkRef, MailboxStore, NewEntry, PutResult } from '../../src/cache/mailbox-store.js';
import type { NonceClaim } from '../../src/ports/nonce-registry.js';

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

/** The chunk staging window the tests store with. */
export const WINDOW = HOUR;

/** Chunk `sequence` of `total` in set `groupId`. */
export const chunkOf = (groupId: string, sequence: number, total: number, over: Partial<NewEntry> & { body?: string } = {}): NewEntry =>
  entry({ chunk: { groupId, sequence, total } satisfies ChunkRef, ...over });

/** Stores `e` in `s` at `nowMs`. */
export const put = (s: MailboxStore, e: NewEntry, nowMs = NOW, claim: NonceClaim | null = null, quotaBytes: number | null = null): Promise<PutResult> =>
  s.put({ entry: e, nowMs, chunkWindowMs: WINDOW, claim, quotaBytes });

/** A pull proof's nonce claim for {@link DID}. */
export const claimOf = (nonce: string, over: Partial<NonceClaim> = {}): NonceClaim => ({
  scope: 'proof:pull',
  did: DID,
  keyId: `${DID}#k1`,
  nonce,
  expiresAtMs: NOW + 300_000,
  ...over,
});
