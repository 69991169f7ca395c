/**
 * Response bodies of the Cache (http-api.md §11.1, §11.5–§11.6). Bodies that embed stored envelopes are built
 * as bytes around the stored text (see `envelope-text.ts`); the rest are plain objects.
 */
import { isoMs } from '../base/clock.js';
import { formatIsoDuration } from '../codec/duration.js';
import type { CacheStoreResponse } from '../wire/cache.js';
import { expiryMember, openEnvelope } from './envelope-text.js';
import type { ChunkRef, ChunkSetView, EntryMeta, EnvelopeBytes, MessagePage, PutResult, RetrievedEntry, SummaryEntry } from './mailbox-store.js';

/**
 * Accumulates a JSON text of strings and stored bytes, and writes it out once: consecutive strings are joined as
 * strings; an answer of text alone is that string, else one buffer the parts are written into (no buffer per
 * string in between).
 */
class JsonBytes {
  private readonly parts: (string | Buffer)[] = [];
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
    this.parts.push(this.text);
    this.size += Buffer.byteLength(this.text);
    this.text = '';
  }

  /** A stored envelope with its `expires_at` member (the stored bytes are not copied here). */
  envelope(envelope: EnvelopeBytes, expiresAtIso: string): this {
    if (typeof envelope === 'string') this.raw(envelope.slice(0, -1));
    else for (const part of openEnvelope(envelope)) this.bytes(part);
    return this.raw(expiryMember(expiresAtIso));
  }

  /** An object's members without the closing brace, to append more members after. */
  openObject(o: object): this {
    const s = JSON.stringify(o);
    return this.raw(s.slice(0, -1));
  }

  /**
   * The text as one string or buffer, or — when it embeds large stored envelopes — as buffers to send in order:
   * runs of small parts are joined, large ones are passed by reference rather than copied into one more buffer.
   */
  toPayload(): string | Buffer | Buffer[] {
    // all text (envelopes read as text): the string itself, encoded once as it is sent
    if (this.parts.length === 0) return this.text;
    this.endText();
    if (this.size < LARGE_PART_BYTES) return joinParts(this.parts, this.size);
    const out: Buffer[] = [];
    let run: (string | Buffer)[] = [];
    let runSize = 0;
    const endRun = () => {
      if (run.length > 0) out.push(joinParts(run, runSize));
      run = [];
      runSize = 0;
    };
    for (const p of this.parts) {
      const size = typeof p === 'string' ? Buffer.byteLength(p) : p.length;
      if (size < LARGE_PART_BYTES) {
        run.push(p);
        runSize += size;
        continue;
      }
      endRun();
      out.push(typeof p === 'string' ? Buffer.from(p) : p);
    }
    endRun();
    return out;
  }
}

/** `parts` written into one new buffer of `size` bytes (their UTF-8 length together). */
function joinParts(parts: readonly (string | Buffer)[], size: number): Buffer {
  if (parts.length === 1 && typeof parts[0] !== 'string') return parts[0];
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const p of parts) {
    if (typeof p === 'string') at += out.write(p, at);
    else at += p.copy(out, at);
  }
  return out;
}

/** Parts at least this large are not copied into the response buffer. */
const LARGE_PART_BYTES = 64 * 1024;

/** `proof` of store responses (retrieved items get {@link retrievalProof}). */
function deliveryProof(meta: EntryMeta, atIso: string): CacheStoreResponse['proof'] {
  return { event_type: 'delivery', message_id: meta.messageId, recipient_did: meta.recipientDid, timestamp: atIso };
}

/** The 202 body of `POST /cache/store` (§11.1). */
export function storeResponse(r: PutResult): CacheStoreResponse {
  const e = r.entry;
  const set = r.chunkSet;
  const p = e.provenance;
  return {
    accepted: true,
    deduped: r.deduped,
    message_id: e.messageId,
    recipient: e.recipientDid,
    expires_at: isoMs(e.expiresAtMs),
    max_ttl: formatIsoDuration(e.maxTtlSeconds),
    applied_ttl: formatIsoDuration(e.appliedTtlSeconds),
    chunked: e.chunk !== null,
    ...(set === null
      ? {}
      : {
          code: set.complete ? 'chunk_set_complete' : 'chunk_staged',
          complete: set.complete,
          received_chunks: set.received,
          expected_chunks: set.total,
          ...(!set.complete && set.retryUntilMs !== null ? { retry_until: isoMs(set.retryUntilMs) } : {}),
        }),
    proof: deliveryProof(e, isoMs(e.storedAtMs)),
    ...(p === null ? {} : { policy_id: p.policyId, policy_revision: p.policyRevision, rule_id: p.ruleId, policy_block_hash: p.blockHash }),
  };
}

/** An item's chunk members as JSON text, each after a comma (none for an unchunked entry). */
function chunkMembers(c: ChunkRef | null): string {
  return c === null ? '' : `,"message_group_id":${JSON.stringify(c.groupId)},"sequence_number":${c.sequence},"total_chunks":${c.total}`;
}

/**
 * One message item (§11.5) appended to `w`; `nowIso` is the retrieval proof's timestamp. Written as text around
 * the stored envelope: a pull answers with many items, and building an object per item and member, only to
 * serialise it again, cost more than the rest of the answer.
 */
function writeMessageItem(w: JsonBytes, e: RetrievedEntry, nowIso: string): void {
  const m = e.meta;
  const expiresAt = isoMs(m.expiresAtMs);
  const id = JSON.stringify(m.messageId);
  const recipient = JSON.stringify(m.recipientDid);
  w.raw(`{"message_id":${id},"recipient":${recipient},"expires_at":"${expiresAt}","chunked":${m.chunk !== null}${chunkMembers(m.chunk)},"envelope":`);
  w.envelope(e.envelope, expiresAt);
  w.raw(`,${retrievalProof(id, recipient, nowIso)}}`);
}

/** The `proof` member of a retrieved item, from its JSON-quoted message id and recipient. */
function retrievalProof(idJson: string, recipientJson: string, nowIso: string): string {
  return `"proof":{"event_type":"retrieval","message_id":${idJson},"recipient_did":${recipientJson},"timestamp":"${nowIso}"}`;
}

/** `GET /cache/messages/{did}`: `{did, count, messages, truncated}`. */
export function messagesBody(did: string, page: MessagePage, nowMs: number): string | Buffer | Buffer[] {
  const nowIso = isoMs(nowMs);
  // a page read for this request alone is rendered as text: a template is worth making only for one answered again
  const template = page.kept === true ? pageTemplate(did, page, nowIso.length) : null;
  if (template === null) return renderMessages(did, page, nowIso);
  const out = Buffer.allocUnsafe(template.bytes.length);
  template.bytes.copy(out);
  for (const at of template.stamps) out.write(nowIso, at, 'latin1');
  return out;
}

function renderMessages(did: string, page: MessagePage, nowIso: string): string | Buffer | Buffer[] {
  const w = new JsonBytes().openObject({ did, count: page.entries.length }).raw(',"messages":[');
  page.entries.forEach((e, i) => {
    if (i > 0) w.raw(',');
    writeMessageItem(w, e, nowIso);
  });
  return w.raw(`],"truncated":${page.truncated}}`).toPayload();
}

/**
 * A pull's answer as bytes with the items' proof timestamps left open, so that answering the same page again is a
 * copy and a few small writes: no rendering, and no UTF-8 length scan and encoding of the whole text.
 */
interface PageTemplate {
  readonly did: string;
  readonly bytes: Buffer;
  /** Byte offsets of the timestamps, each {@link stampLength} bytes. */
  readonly stamps: readonly number[];
  readonly stampLength: number;
}

/**
 * Templates by page object, for pages a read cache keeps (`MessagePage.kept`): the store hands the same page object
 * to every pull of an unchanged mailbox, and the template goes when the page does. (Pages read afresh get none: an
 * entry per request here cost more in garbage collection than the template saved.)
 */
const pageTemplates = new WeakMap<MessagePage, PageTemplate>();

/**
 * The template of `page` for timestamps of `stampLength` characters, rendered with NUL characters where each goes:
 * a JSON text holds no raw NUL (a string escapes it), so they mark exactly the timestamps. Null for a page answered
 * in parts (a large envelope), which is rendered each time, as is one whose stored bytes hold a NUL after all.
 */
function pageTemplate(did: string, page: MessagePage, stampLength: number): PageTemplate | null {
  const kept = pageTemplates.get(page);
  if (kept !== undefined && kept.did === did && kept.stampLength === stampLength) return kept;
  const rendered = renderMessages(did, page, '\0'.repeat(stampLength));
  if (Array.isArray(rendered)) return null;
  const bytes = typeof rendered === 'string' ? Buffer.from(rendered, 'utf8') : rendered;
  const stamps: number[] = [];
  for (let at = bytes.indexOf(0); at !== -1; at = bytes.indexOf(0, at + stampLength)) stamps.push(at);
  // one per item; anything else means stored bytes with a NUL in them (a damaged file): render each time
  if (stamps.length !== page.entries.length) return null;
  const template: PageTemplate = { did, bytes, stamps, stampLength };
  pageTemplates.set(page, template);
  return template;
}

/** `GET /cache/message/{did}/{id}`: `{state: "active", message}`. */
export function messageBody(e: RetrievedEntry, nowMs: number): string | Buffer | Buffer[] {
  const w = new JsonBytes().raw('{"state":"active","message":');
  writeMessageItem(w, e, isoMs(nowMs));
  return w.raw('}').toPayload();
}

/** `GET /cache/chunks/{did}/{group}`: the complete set in sequence order. */
export function chunksBody(did: string, groupId: string, set: ChunkSetView, nowMs: number): string | Buffer | Buffer[] {
  const w = new JsonBytes()
    .openObject({ did, message_group_id: groupId, complete: true, total_chunks: set.total, count: set.entries.length })
    .raw(',"chunks":[');
  const nowIso = isoMs(nowMs);
  set.entries.forEach((e, i) => {
    const m = e.meta;
    const expiresAt = isoMs(m.expiresAtMs);
    const id = JSON.stringify(m.messageId);
    w.raw(`${i > 0 ? ',' : ''}{"message_id":${id},"sequence_number":${m.chunk?.sequence ?? 0},"expires_at":"${expiresAt}","envelope":`);
    w.envelope(e.envelope, expiresAt);
    w.raw(`,${retrievalProof(id, JSON.stringify(m.recipientDid), nowIso)}}`);
  });
  return w.raw(']}').toPayload();
}

/**
 * `GET /cache/summary/{did}[/{device}]`: `{did, count, messages}`, written as text as a pull's items are (§11.5:
 * `message_id`, `chunked`, the chunk members, `expires_at`, `stored_at`, `size_bytes`, then `tag` and
 * `application_id` when set).
 */
export function summaryBody(did: string, entries: readonly SummaryEntry[]): string {
  let s = `{"did":${JSON.stringify(did)},"count":${entries.length},"messages":[`;
  entries.forEach((m, i) => {
    s += `${i > 0 ? ',' : ''}{"message_id":${JSON.stringify(m.messageId)},"chunked":${m.chunk !== null}${chunkMembers(m.chunk)}`;
    s += `,"expires_at":"${isoMs(m.expiresAtMs)}","stored_at":"${isoMs(m.storedAtMs)}","size_bytes":${m.sizeBytes}`;
    if (m.tag !== null) s += `,"tag":${JSON.stringify(m.tag)}`;
    if (m.applicationId !== null) s += `,"application_id":${JSON.stringify(m.applicationId)}`;
    s += '}';
  });
  return `${s}]}`;
}
