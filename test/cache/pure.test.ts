/** The Cache's pure rules: retention (§11.2), chunk admission (§11.3), destinations (§11.1 step 6), stored text. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import { checkChunk, checkDuplicate, chunkRetryUntil, chunkSetState } from '../../src/cache/admission.js';
import { namedStoreStep, publishedDestination, targetDestination } from '../../src/cache/destination.js';
import { expiryMember, openEnvelope, trimJsonObject } from '../../src/cache/envelope-text.js';
import { computeRetention } from '../../src/cache/retention.js';
import { CacheSweeper } from '../../src/cache/sweeper.js';
import { messagesBody, summaryBody } from '../../src/cache/views.js';
import type { SweepResult } from '../../src/cache/mailbox-store.js';
import { formatIsoDuration } from '../../src/codec/duration.js';
import type { DidDocument } from '../../src/protocol/document.js';

const isCode = (code: string) => (e: unknown) => e instanceof DdnError && e.code === code;
const NOW = 1_800_000_000_000;

describe('retention', () => {
  it('expires at min(requested, now + max_ttl) with max_ttl = min(effective, configured)', () => {
    assert.deepEqual(computeRetention(NOW + 86_400_000, 172_800, 172_800, NOW), {
      maxTtlSeconds: 172_800,
      expiresAtMs: NOW + 86_400_000,
      appliedTtlSeconds: 86_400,
    });
    assert.deepEqual(computeRetention(NOW + 86_400_000, 3_600, 172_800, NOW), { maxTtlSeconds: 3_600, expiresAtMs: NOW + 3_600_000, appliedTtlSeconds: 3_600 });
    assert.deepEqual(computeRetention(NOW + 86_400_000, 172_800, 60, NOW), { maxTtlSeconds: 60, expiresAtMs: NOW + 60_000, appliedTtlSeconds: 60 });
    assert.equal(computeRetention(NOW + 1_500, 172_800, 172_800, NOW).appliedTtlSeconds, 1, 'whole seconds');
    assert.throws(() => computeRetention(NOW, 172_800, 172_800, NOW), isCode('envelope_expired'));
    assert.equal(formatIsoDuration(172_800), 'PT48H');
    assert.equal(formatIsoDuration(86_398), 'PT23H59M58S');
    assert.equal(formatIsoDuration(0), 'PT0S');
  });
});

describe('chunk admission', () => {
  it('dedupes identical content and refuses conflicts', () => {
    const chunk = { groupId: 'g', sequence: 1, total: 3 };
    type Held = { contentHash: string; messageId: string; recipientDid: string; chunk: typeof chunk | null };
    const held: Held = { contentHash: 'h', messageId: 'm', recipientDid: 'did:a', chunk: null };
    const incoming = (over: Partial<Held>): Held => ({ ...held, ...over });
    assert.equal(checkDuplicate(null, incoming({})), 'new');
    assert.equal(checkDuplicate(held, incoming({})), 'dedupe');
    assert.equal(checkDuplicate(held, incoming({ contentHash: 'x' })), 'dedupe', 'unchunked, same recipient: a re-encrypted retry');
    assert.throws(() => checkDuplicate(held, incoming({ contentHash: 'x', recipientDid: 'did:b' })), isCode('message_id_conflict'));
    assert.throws(() => checkDuplicate(held, incoming({ contentHash: 'x', chunk })), isCode('message_id_conflict'));
    assert.throws(() => checkDuplicate({ ...held, chunk }, incoming({ contentHash: 'x' })), isCode('message_id_conflict'));
    assert.equal(checkDuplicate({ ...held, chunk }, incoming({ chunk })), 'dedupe', 'an identical chunk');
    assert.throws(() => checkDuplicate({ ...held, chunk }, incoming({ contentHash: 'x', chunk })), isCode('message_id_conflict'));
    checkChunk(null, null, chunk);
    checkChunk({ total: 3 }, null, chunk);
    assert.throws(() => checkChunk({ total: 2 }, null, chunk), isCode('chunk_set_conflict'));
    assert.throws(() => checkChunk({ total: 3 }, 'other-id', chunk), isCode('chunk_conflict'));
    assert.equal(chunkRetryUntil(NOW, 3_600_000, NOW + 60_000), NOW + 60_000);
    assert.equal(chunkRetryUntil(NOW, 3_600_000, NOW + 7_200_000), NOW + 3_600_000);
    assert.deepEqual(chunkSetState('g', 3, 2, false, NOW), { groupId: 'g', total: 3, received: 2, complete: false, retryUntilMs: NOW });
    assert.deepEqual(chunkSetState('g', 3, 3, false, NOW), { groupId: 'g', total: 3, received: 3, complete: true, retryUntilMs: null });
    assert.equal(chunkSetState('g', 3, 1, true, NOW).complete, true, 'sticky');
  });
});

describe('destinations', () => {
  const did = 'did:platform:2222222222222222';
  const doc: DidDocument = {
    id: did,
    verificationMethod: [],
    authentication: null,
    keyAgreement: [],
    service: [
      { id: `${did}#relay`, type: 'PlatformRelayService', serviceEndpoint: ['https://c.example'], authorization: null, priority: null },
      { id: `${did}#cache`, type: 'PlatformCacheService', serviceEndpoint: ['https://a.example', 'https://c.example/'], authorization: null, priority: null },
    ],
  };
  it("matches a published Cache service endpoint against this node's URLs", () => {
    assert.deepEqual(publishedDestination(doc, 'PlatformCacheService', ['https://c.example']), { serviceId: `${did}#cache`, endpoint: 'https://c.example' });
    assert.equal(publishedDestination(doc, 'PlatformCacheService', ['https://b.example']), undefined);
    assert.equal(publishedDestination(null, 'PlatformCacheService', ['https://c.example']), undefined);
    assert.deepEqual(targetDestination(doc, `${did}#cache`, 'PlatformCacheService', ['https://a.example/']), {
      serviceId: `${did}#cache`,
      endpoint: 'https://a.example',
    });
    assert.equal(targetDestination(doc, `${did}#relay`, 'PlatformCacheService', ['https://c.example']), undefined);
  });
  it('finds the named Store/Archive step of a plan', () => {
    const action = {
      type: 'DeliveryPlan/v1',
      entry_step: 's',
      steps: [
        { id: 's', operation: 'Store', targets: [{ service_did: did, service_id: `${did}#cache` }, { bad: true }] },
        { id: 'f', operation: 'Forward', targets: [] },
      ],
      transitions: [],
    };
    assert.deepEqual(namedStoreStep(action, 's'), { operation: 'Store', targets: [{ serviceDid: did, serviceId: `${did}#cache` }] });
    assert.equal(namedStoreStep(action, 'f'), undefined);
    assert.equal(namedStoreStep(action, 'x'), undefined);
    assert.equal(namedStoreStep({ type: 'BaseDidDelivery/v1' }, 's'), undefined);
  });
});

describe('stored envelope text', () => {
  it('trims a BOM and JSON whitespace without copying, and splices expires_at', () => {
    const raw = Buffer.from('\ufeff \n{"a": 1 , "b":[2]}\r\n\t');
    const t = trimJsonObject(raw);
    assert.equal(t.toString(), '{"a": 1 , "b":[2]}');
    assert.equal(t.buffer, raw.buffer);
    const open = openEnvelope(t);
    assert.equal(open[0].buffer, raw.buffer, 'the stored bytes are not copied');
    const spliced = Buffer.concat([...open, Buffer.from(expiryMember('2026-01-01T00:00:00.000Z'))]).toString();
    assert.deepEqual(JSON.parse(spliced), { a: 1, b: [2], expires_at: '2026-01-01T00:00:00.000Z' });
    // an envelope held in parts (a large one) loses only the last part's closing brace
    const parts = openEnvelope([Buffer.from('{"a":'), Buffer.from(''), Buffer.from('"x"}')]);
    assert.equal(Buffer.concat(parts).toString(), '{"a":"x"');
    assert.throws(() => trimJsonObject(Buffer.from('[1]')));
  });
});

describe('retrieval bodies, written as text', () => {
  const at = Date.UTC(2026, 10, 25, 12, 0, 0, 5);
  const iso = (ms: number) => new Date(ms).toISOString();

  it('a summary: its members in order, chunk members, tag and application id only when set, strings escaped', () => {
    const body = summaryBody('did:platform:a', [
      { messageId: 'm1', storedAtMs: at, expiresAtMs: at + 1000, tag: null, applicationId: null, chunk: null, sizeBytes: 10 },
      {
        messageId: 'm2',
        storedAtMs: at,
        expiresAtMs: at + 2000,
        tag: 'in"voice\\n',
        applicationId: 'app',
        chunk: { groupId: 'g', sequence: 1, total: 3 },
        sizeBytes: 20,
      },
    ]);
    const parsed = JSON.parse(body) as { messages: Record<string, unknown>[] };
    assert.deepEqual(parsed, {
      did: 'did:platform:a',
      count: 2,
      messages: [
        { message_id: 'm1', chunked: false, expires_at: iso(at + 1000), stored_at: iso(at), size_bytes: 10 },
        {
          message_id: 'm2',
          chunked: true,
          message_group_id: 'g',
          sequence_number: 1,
          total_chunks: 3,
          expires_at: iso(at + 2000),
          stored_at: iso(at),
          size_bytes: 20,
          tag: 'in"voice\\n',
          application_id: 'app',
        },
      ],
    });
    assert.deepEqual(Object.keys(parsed.messages[1]), [
      'message_id',
      'chunked',
      'message_group_id',
      'sequence_number',
      'total_chunks',
      'expires_at',
      'stored_at',
      'size_bytes',
      'tag',
      'application_id',
    ]);
    assert.deepEqual(JSON.parse(summaryBody('did:platform:a', [])), { did: 'did:platform:a', count: 0, messages: [] });
  });

  it('a page of envelopes read as text, as bytes and in parts gives the same answer', () => {
    const text = '{"message_id":"m1","x":"é"}';
    const meta = { messageId: 'm1', recipientDid: 'did:platform:a', expiresAtMs: at + 1000, chunk: null };
    const answers = [text, Buffer.from(text), [Buffer.from(text.slice(0, 5)), Buffer.from(text.slice(5))]].map((envelope) => {
      const payload = messagesBody('did:platform:a', { entries: [{ meta, envelope }], truncated: false }, at);
      return Buffer.from(typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload : Buffer.concat(payload)).toString();
    });
    assert.equal(answers[1], answers[0]);
    assert.equal(answers[2], answers[0]);
    assert.deepEqual(JSON.parse(answers[0]), {
      did: 'did:platform:a',
      count: 1,
      messages: [
        {
          message_id: 'm1',
          recipient: 'did:platform:a',
          expires_at: iso(at + 1000),
          chunked: false,
          envelope: { message_id: 'm1', x: 'é', expires_at: iso(at + 1000) },
          proof: { event_type: 'retrieval', message_id: 'm1', recipient_did: 'did:platform:a', timestamp: iso(at) },
        },
      ],
      truncated: false,
    });
  });
});

describe('a pull answer answered again (the page template)', () => {
  const at = Date.UTC(2026, 10, 25, 12, 0, 0, 5);
  const iso = (ms: number) => new Date(ms).toISOString();
  const text = (p: string | Buffer | Buffer[]) => (typeof p === 'string' ? p : Buffer.isBuffer(p) ? p : Buffer.concat(p)).toString();
  const did = 'did:platform:a';
  const page = {
    entries: [
      { meta: { messageId: 'm"1', recipientDid: did, expiresAtMs: at + 1000, chunk: null }, envelope: '{"message_id":"m\\"1","x":"é😀"}' },
      { meta: { messageId: 'c1', recipientDid: did, expiresAtMs: at + 2000, chunk: { groupId: 'g', sequence: 1, total: 1 } }, envelope: '{"message_id":"c1"}' },
    ],
    truncated: true,
    kept: true as const,
  };

  it('gives each answer of the same page its own timestamps and is otherwise the same text as a fresh page', () => {
    const first = text(messagesBody(did, page, at));
    const later = text(messagesBody(did, page, at + 60_000));
    assert.equal(later, first.replaceAll(iso(at), iso(at + 60_000)));
    assert.equal(text(messagesBody(did, structuredClone(page), at + 60_000)), later);
    assert.equal(text(messagesBody(did, { entries: page.entries, truncated: true }, at + 60_000)), later, 'as a page read afresh, rendered as text');
    const parsed = JSON.parse(later) as { messages: { proof: { timestamp: string }; envelope: Record<string, unknown> }[] };
    assert.deepEqual(
      parsed.messages.map((m) => m.proof.timestamp),
      [iso(at + 60_000), iso(at + 60_000)],
    );
    assert.deepEqual(parsed.messages[0].envelope, { message_id: 'm"1', x: 'é😀', expires_at: iso(at + 1000) });
    assert.deepEqual(Object.keys(parsed.messages[1]), [
      'message_id',
      'recipient',
      'expires_at',
      'chunked',
      'message_group_id',
      'sequence_number',
      'total_chunks',
      'envelope',
      'proof',
    ]);
    assert.equal((JSON.parse(later) as { truncated: boolean }).truncated, true);
  });

  it('hands out a copy: changing one answer changes no later one', () => {
    const a = messagesBody(did, page, at);
    assert.ok(Buffer.isBuffer(a));
    a.fill(0);
    assert.equal(JSON.parse(text(messagesBody(did, page, at))).count, 2);
  });

  it('answers a page whose stored text holds a NUL (a damaged file) exactly, rendered each time', () => {
    const damaged = {
      entries: [{ meta: { messageId: 'n', recipientDid: did, expiresAtMs: at + 1000, chunk: null }, envelope: '{"a":"\0\0"}' }],
      truncated: false,
      kept: true as const,
    };
    for (const t of [at, at + 1]) {
      const answer = text(messagesBody(did, damaged, t));
      assert.ok(answer.includes('{"a":"\0\0","expires_at":'), 'the stored text as it is');
      assert.ok(answer.endsWith(`"timestamp":"${iso(t)}"}}],"truncated":false}`));
      assert.equal(answer.split('\0').length - 1, 2);
    }
  });
});

describe('CacheSweeper', () => {
  it('shares a run in progress, and stops cleanly', async () => {
    let runs = 0;
    let release!: () => void;
    const result: SweepResult = { expiredEntries: 1, purgedChunkSets: 0, purgedChunks: 0, expiredNonces: 2 };
    const sweeper = new CacheSweeper(() => {
      runs++;
      return new Promise((resolve) => {
        release = () => resolve(result);
      });
    }, 60_000);
    sweeper.start();
    sweeper.start();
    const a = sweeper.sweep();
    const b = sweeper.sweep();
    assert.equal(runs, 1);
    const stopped = sweeper.stop();
    release();
    assert.deepEqual(await a, result);
    assert.equal(await b, await a);
    await stopped;
    void sweeper.sweep();
    assert.equal(runs, 2, 'a new run after the first finished');
    release();
  });
});
