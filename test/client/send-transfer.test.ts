/**
 * The pieces behind resumable, signed, streamed transfers: transfer keys that rebuild byte-identical envelopes,
 * the incremental FileAssembler, the recipient's own sender-signature check, and the Relay client's fail-fast
 * on an unreachable Relay and its retry notices.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { to0x } from '../../src/base/bytes.js';
import { RelayClient, RelayError, type RelayRetry } from '../../src/client/relay-client.js';
import { transferKeys, uuidFromBytes } from '../../src/client/send-keys.js';
import { directorySenderCheck } from '../../src/client/sender-check.js';
import type { DidRecordResponse } from '../../src/client/types.js';
import { DirectoryApiError } from '../../src/client/http.js';
import { keyPairFromSeed } from '../../src/crypto/ed25519.js';
import { sha256 } from '../../src/crypto/hash.js';
import { generateX25519KeyPair } from '../../src/crypto/x25519.js';
import { FileAssembler, openFileEnvelope } from '../../src/protocol/file-assembly.js';
import { buildFileEnvelope, planFileTransfer, type EnvelopeSigner } from '../../src/protocol/file-envelopes.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { BASE, fakeFetch, fakeTiming } from './fake-fetch.js';

const TO = 'did:platform:8DfbjXLth7APvt3qQPgtf';
const SENDER = 'did:platform:3vQB7B6MrGQZaxCuFg4oh';
const LIMITS = { maxHttpEnvelopeBytes: 100_000, maxUnchunkedMessageBytes: 9_000, maxChunkBytes: 9_000 };
const recipient = generateX25519KeyPair();
const file = new Uint8Array(30_000).map((_, i) => (i * 7 + 3) & 0xff);
const plan = planFileTransfer(file.length, LIMITS);

function envelopes(secret: Uint8Array, data = file, sender?: EnvelopeSigner): { body: string; envelope: Record<string, unknown> }[] {
  const keys = transferKeys(secret);
  return Array.from({ length: plan.total }, (_, seq) => {
    const part = data.subarray(seq * plan.partBytes, (seq + 1) * plan.partBytes);
    return buildFileEnvelope(
      PLATFORM,
      {
        to: TO,
        messageId: keys.messageId(seq),
        timestamp: '2026-07-16T12:00:00.000Z',
        recipient: { keyId: `${TO}#x25519-1`, publicKey: recipient.publicKey },
        record: {
          name: 'f.bin',
          mediaType: 'application/octet-stream',
          sizeBytes: data.length,
          sha256: sha256(data),
          groupId: keys.groupId,
          sequence: seq,
          total: plan.total,
          data: part,
        },
        seal: keys.seal(seq, part),
        ...(sender === undefined ? {} : { sender }),
      },
      LIMITS,
    );
  });
}

describe('transfer keys', () => {
  it('rebuild byte-identical envelopes from the same secret; another secret or other bytes change them', () => {
    const secret = new Uint8Array(32).fill(1);
    const a = envelopes(secret);
    assert.deepEqual(
      envelopes(secret).map((e) => e.body),
      a.map((e) => e.body),
    );
    assert.equal(a.length, plan.total);
    assert.match(a[0]!.envelope.message_group_id as string, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(new Set(a.map((e) => e.envelope.message_id)).size, plan.total);
    const other = envelopes(new Uint8Array(32).fill(2));
    assert.notEqual(other[0]!.envelope.message_group_id, a[0]!.envelope.message_group_id);
    const changed = Uint8Array.from(file);
    changed[0]! ^= 1;
    const b = envelopes(secret, changed);
    const eph = (e: { envelope: Record<string, unknown> }) => (e.envelope.payload as Record<string, string>).ephemeral_x25519_b64;
    assert.notEqual(eph(b[0]!), eph(a[0]!), 'changed chunk bytes never reuse the ephemeral key');
    assert.equal(eph(b[1]!), eph(a[1]!));
    assert.equal(uuidFromBytes(new Uint8Array(16)), '00000000-0000-4000-8000-000000000000');
  });
});

describe('FileAssembler', () => {
  const records = () => envelopes(randomBytes(32)).map((e) => openFileEnvelope(PLATFORM, e.envelope, recipient.privateKey));

  it('accepts the records in order without keeping them and checks the whole file at the end', () => {
    const asm = new FileAssembler();
    const parts: Uint8Array[] = [];
    for (const r of records()) {
      asm.add(r);
      parts.push(r.data);
    }
    assert.equal(asm.received, file.length);
    const done = asm.finish();
    assert.equal(done.sha256Hex, Buffer.from(sha256(file)).toString('hex'));
    assert.deepEqual(new Uint8Array(Buffer.concat(parts)), file);
  });

  it('refuses a record out of order, a changed header, a short set and altered bytes', () => {
    const code = (fn: () => unknown, c: string) => assert.throws(fn, (e: unknown) => (e as { code?: string }).code === c);
    const rs = records();
    code(() => new FileAssembler().add(rs[1]!), 'incomplete_chunk_set');
    const a = new FileAssembler();
    a.add(rs[0]!);
    code(() => a.add({ ...rs[1]!, name: 'other' }), 'inconsistent_chunk_set');
    const short = new FileAssembler();
    short.add(rs[0]!);
    code(() => short.finish(), 'incomplete_chunk_set');
    const flipped = new FileAssembler();
    for (const [i, r] of rs.entries()) flipped.add(i === 2 ? { ...r, data: r.data.map((x, j) => (j === 0 ? x ^ 1 : x)) } : r);
    code(() => flipped.finish(), 'file_integrity_mismatch');
  });
});

describe('the recipient’s sender check', () => {
  const key = keyPairFromSeed(new Uint8Array(32).fill(9));
  const signer: EnvelopeSigner = { did: SENDER, keyId: 'root', sign: (b) => key.sign(b) };
  const record = { did: SENDER, root_pubkey: to0x(key.publicKey), deactivated: false, document: null } as unknown as DidRecordResponse;
  const directory = {
    calls: 0,
    async resolve(did: string): Promise<DidRecordResponse> {
      this.calls++;
      if (did === SENDER) return record;
      throw new DirectoryApiError(404, 'did_not_found', 'no', {});
    },
  };

  it('verifies every signed chunk against the sender’s record, looked up once', async () => {
    const check = directorySenderCheck(PLATFORM, directory);
    for (const e of envelopes(randomBytes(32), file, signer)) assert.deepEqual(await check(e.envelope), { did: SENDER, key_id: 'root' });
    assert.equal(directory.calls, 1);
  });

  it('refuses an altered envelope, an unknown sender and a malformed signature', async () => {
    const check = directorySenderCheck(PLATFORM, directory);
    const [e] = envelopes(randomBytes(32), file, signer);
    const refused = (reason: string) => (err: unknown) =>
      (err as { code?: string }).code === 'invalid_sender_signature' && (err as { details?: { reason?: string } }).details?.reason === reason;
    await assert.rejects(check({ ...e!.envelope, tag: 'added' }), refused('bad_signature'));
    await assert.rejects(check({ ...e!.envelope, sender: TO }), refused('sender_not_found'));
    await assert.rejects(check({ ...e!.envelope, sender_signature: 'AAAA' }), refused('bad_signature'));
  });
});

describe('RelayClient failures', () => {
  it('reports a refused connection at once, without a retry', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const timing = fakeTiming();
    const retries: RelayRetry[] = [];
    await assert.rejects(
      new RelayClient(`http://127.0.0.1:${port}`, { timing, onRetry: (r) => retries.push(r) }).post('{}'),
      (e: unknown) => e instanceof RelayError && e.code === 'relay_unreachable' && e.attempts === 1 && /ECONNREFUSED/.test(e.message),
    );
    assert.deepEqual([timing.slept, retries], [[], []]);
  });

  it('tells why before each wait (a CLI prints it with a countdown)', async () => {
    const { fetch } = fakeFetch(() => ({
      status: 502,
      body: {
        success: false,
        delivery_mode: 'failed',
        http_status: 502,
        code: 'upstream_unavailable',
        message: 'every Cache endpoint of the recipient failed: http://c: network: connect ECONNREFUSED',
        retry_count: 1,
        cache_attempted: true,
        cache_result: 'failed',
        details: {},
      },
    }));
    const retries: RelayRetry[] = [];
    await assert.rejects(new RelayClient(BASE, { fetch, timing: fakeTiming(), maxAttempts: 3, backoffMs: 100, onRetry: (r) => retries.push(r) }).post('{}'));
    assert.deepEqual(
      retries.map((r) => [r.attempt, r.maxAttempts, r.waitMs]),
      [
        [1, 3, 100],
        [2, 3, 200],
      ],
    );
    assert.match(
      retries[0]!.error.message,
      /502 upstream_unavailable: every Cache endpoint of the recipient failed: http:\/\/c: network: connect ECONNREFUSED/,
    );
  });

  it('does not retry a 502 whose every downstream failure is permanent (a refused address, an unknown host)', async () => {
    const answer = (reasons: string[]) =>
      fakeFetch(() => ({
        status: 502,
        body: {
          success: false,
          delivery_mode: 'failed',
          http_status: 502,
          code: 'upstream_unavailable',
          message: 'down',
          retry_count: 1,
          cache_attempted: true,
          cache_result: 'failed',
          details: { failures: reasons.map((reason, i) => ({ endpoint: `http://c${i}`, reason })) },
        },
      }));
    for (const reasons of [
      ['blocked_address: 127.0.0.1 is not a public address'],
      ['network: getaddrinfo ENOTFOUND cache.example.net', 'invalid_url: invalid URL x'],
    ]) {
      const { fetch, calls } = answer(reasons);
      await assert.rejects(new RelayClient(BASE, { fetch, timing: fakeTiming() }).post('{}'), (e: unknown) => e instanceof RelayError && e.status === 502);
      assert.equal(calls.length, 1, reasons.join());
    }
    const { fetch, calls } = answer(['blocked_address: x', 'network: connect ECONNREFUSED 10.0.0.1:80']);
    await assert.rejects(new RelayClient(BASE, { fetch, timing: fakeTiming(), maxAttempts: 2 }).post('{}'));
    assert.equal(calls.length, 2, 'one transient failure among them: retried');
  });
});
