/**
 * Response bodies of the Cache (http-api.md §11.1, §11.5–§11.6). Bodies that embed stored envelopes are built
 * as bytes around the stored text (see `envelope-text.ts`); the rest are plain objects.
 */
import { isoMs } from '../base/clock.js';
import { formatIsoDuration } from '../codec/duration.js';
import { expiryMember, openEnvelope } from './envelope-text.js';
import type { ChunkSetView, EntryMeta, EntryWithEnvelope, EnvelopeBytes, MessagePage, PutResult, SummaryEntry } from './mailbox-store.js';

/** Accumulates a JSON text as buffers; consecutive strings are encoded together, once. */
class JsonBytes {
  private readonly parts: Buffer[] = [];
  private size = 0;
  private text = '';

  raw(s: string): this {
    this.text += s;
    return this;
  }

  bytes(b: Buffer): this {
    this.endText();
    this.parts.push(b);
    this.size += b.length;
    return this;
  }

  private endText(): void {
    if (this.text === '') return;
    const b = Buffer.from(this.text, 'utf8');
    this.text = '';
    this.parts.push(b);
    this.size += b.length;
  }

  /** A stored envelope with its `expires_at` member (the stored bytes are not copied here). */
  envelope(envelope: EnvelopeBytes, expiresAtIso: string): this {
    for (const part of openEnvelope(envelope)) this.bytes(part);
    return this.raw(expiryMember(expiresAtIso));
  }

  /** An object's members without the closing brace, to append more members after. */
  openObject(o: object): this {
    const s = JSON.stringify(o);
    return this.raw(s.slice(0, -1));
  }

  /**
   * The text as one buffer, or — when it embeds large stored envelopes — as buffers to send in order: runs of
   * small parts are joined, large ones are passed by reference rather than copied into one more buffer.
   */
  toPayload(): Buffer | Buffer[] {
    this.endText();
    if (this.size < LARGE_PART_BYTES) return Buffer.concat(this.parts, this.size);
    const out: Buffer[] = [];
    let run: Buffer[] = [];
    const endRun = () => {
      if (run.length > 0) out.push(run.length === 1 ? run[0] : Buffer.concat(run));
      run = [];
    };
    for (const p of this.parts) {
      if (p.length < LARGE_PART_BYTES) {
        run.push(p);
        continue;
      }
      endRun();
      out.push(p);
    }
    endRun();
    return out;
  }
}

/** Parts at least this large are not copied into the response buffer. */
const LARGE_PART_BYTES = 64 * 1024;

/** `proof` of store responses (`delivery`) and retrieval items (`retrieval`). */
function proofObject(eventType: 'delivery' | 'retrieval', meta: EntryMeta, atIso: string): Record<string, unknown> {
  return { event_type: eventType, message_id: meta.messageId, recipient_did: meta.recipientDid, timestamp: atIso };
}

/** The 202 body of `POST /cache/store` (§11.1). */
export function storeResponse(r: PutResult): Record<string, unknown> {
  const e = r.entry;
  const body: Record<string, unknown> = {
    accepted: true,
    deduped: r.deduped,
    message_id: e.messageId,
    recipient: e.recipientDid,
    expires_at: isoMs(e.expiresAtMs),
    max_ttl: formatIsoDuration(e.maxTtlSeconds),
    applied_ttl: formatIsoDuration(e.appliedTtlSeconds),
    chunked: e.chunk !== null,
  };
  const set = r.chunkSet;
  if (set !== null) {
    body.code = set.complete ? 'chunk_set_complete' : 'chunk_staged';
    body.complete = set.complete;
    body.received_chunks = set.received;
    body.expected_chunks = set.total;
    if (!set.complete && set.retryUntilMs !== null) body.retry_until = isoMs(set.retryUntilMs);
  }
  body.proof = proofObject('delivery', e, isoMs(e.storedAtMs));
  if (e.provenance !== null) {
    body.policy_id = e.provenance.policyId;
    body.policy_revision = e.provenance.policyRevision;
    body.rule_id = e.provenance.ruleId;
    body.policy_block_hash = e.provenance.blockHash;
  }
  return body;
}

function chunkFields(meta: Pick<EntryMeta, 'chunk'>): Record<string, unknown> {
  return meta.chunk === null
    ? {}
    : { message_group_id: meta.chunk.groupId, sequence_number: meta.chunk.sequence, total_chunks: meta.chunk.total };
}

/** One message item (§11.5) appended to `w`; `nowIso` is the retrieval proof's timestamp. */
function writeMessageItem(w: JsonBytes, e: EntryWithEnvelope, nowIso: string): void {
  const m = e.meta;
  const expiresAt = isoMs(m.expiresAtMs);
  w.openObject({
    message_id: m.messageId,
    recipient: m.recipientDid,
    expires_at: expiresAt,
    chunked: m.chunk !== null,
    ...chunkFields(m),
  });
  w.raw(',"envelope":').envelope(e.envelope, expiresAt);
  w.raw(`,"proof":${JSON.stringify(proofObject('retrieval', m, nowIso))}}`);
}

/** `GET /cache/messages/{did}`: `{did, count, messages, truncated}`. */
export function messagesBody(did: string, page: MessagePage, nowMs: number): Buffer | Buffer[] {
  const w = new JsonBytes().openObject({ did, count: page.entries.length }).raw(',"messages":[');
  const nowIso = isoMs(nowMs);
  page.entries.forEach((e, i) => {
    if (i > 0) w.raw(',');
    writeMessageItem(w, e, nowIso);
  });
  return w.raw(`],"truncated":${page.truncated}}`).toPayload();
}

/** `GET /cache/message/{did}/{id}`: `{state: "active", message}`. */
export function messageBody(e: EntryWithEnvelope, nowMs: number): Buffer | Buffer[] {
  const w = new JsonBytes().raw('{"state":"active","message":');
  writeMessageItem(w, e, isoMs(nowMs));
  return w.raw('}').toPayload();
}

/** `GET /cache/chunks/{did}/{group}`: the complete set in sequence order. */
export function chunksBody(did: string, groupId: string, set: ChunkSetView, nowMs: number): Buffer | Buffer[] {
  const w = new JsonBytes()
    .openObject({ did, message_group_id: groupId, complete: true, total_chunks: set.total, count: set.entries.length })
    .raw(',"chunks":[');
  const nowIso = isoMs(nowMs);
  set.entries.forEach((e, i) => {
    const m = e.meta;
    const expiresAt = isoMs(m.expiresAtMs);
    if (i > 0) w.raw(',');
    w.openObject({ message_id: m.messageId, sequence_number: m.chunk?.sequence ?? 0, expires_at: expiresAt });
    w.raw(',"envelope":').envelope(e.envelope, expiresAt);
    w.raw(`,"proof":${JSON.stringify(proofObject('retrieval', m, nowIso))}}`);
  });
  return w.raw(']}').toPayload();
}

/** One summary item (§11.5). */
export function summaryItem(m: SummaryEntry): Record<string, unknown> {
  const item: Record<string, unknown> = {
    message_id: m.messageId,
    chunked: m.chunk !== null,
    ...chunkFields(m),
    expires_at: isoMs(m.expiresAtMs),
    stored_at: isoMs(m.storedAtMs),
    size_bytes: m.sizeBytes,
  };
  if (m.tag !== null) item.tag = m.tag;
  if (m.applicationId !== null) item.application_id = m.applicationId;
  return item;
}

/** `GET /cache/summary/{did}[/{device}]`: `{did, count, messages}`. */
export function summaryBody(did: string, entries: readonly SummaryEntry[]): Record<string, unknown> {
  return { did, count: entries.length, messages: entries.map(summaryItem) };
}
