/** FileReceiver (http-api.md §11.5, §11.6, §10.7): dedupe across Caches, fallback past a bad copy, ack after write. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { parseBase64, toBase64 } from '../../src/base/bytes.js';
import type { CacheTarget } from '../../src/client/cache-client.js';
import { FileReceiver, WRITTEN_KEPT_MS, type CacheReader, type FileSink } from '../../src/client/file-receiver.js';
import type { CacheSummaryItem } from '../../src/client/transfer-types.js';
import { sha256 } from '../../src/crypto/hash.js';
import { generateX25519KeyPair } from '../../src/crypto/x25519.js';
import { buildFileEnvelope, planFileTransfer } from '../../src/protocol/file-envelopes.js';
import { PLATFORM } from '../../src/protocol/profile.js';

const DID = 'did:platform:8DfbjXLth7APvt3qQPgtf';
const recipient = generateX25519KeyPair();
const LIMITS = { maxHttpEnvelopeBytes: 100_000, maxUnchunkedMessageBytes: 9_000, maxChunkBytes: 9_000 };

type Envelope = Record<string, unknown>;

/** Envelopes of a file for DID (chunked when it exceeds the small limits above). */
function envelopesOf(data: Uint8Array, name: string): Envelope[] {
  const plan = planFileTransfer(data.length, LIMITS);
  const groupId = plan.chunked ? randomUUID() : '';
  return Array.from(
    { length: plan.total },
    (_, seq) =>
      buildFileEnvelope(
        PLATFORM,
        {
          to: DID,
          messageId: randomUUID(),
          timestamp: '2026-07-16T12:00:00.000Z',
          recipient: { keyId: `${DID}#x25519-1`, publicKey: recipient.publicKey },
          record: {
            name,
            mediaType: 'application/octet-stream',
            sizeBytes: data.length,
            sha256: sha256(data),
            groupId,
            sequence: seq,
            total: plan.total,
            data: data.subarray(seq * plan.partBytes, (seq + 1) * plan.partBytes),
          },
        },
        LIMITS,
      ).envelope,
  );
}

function tamper(e: Envelope): Envelope {
  const p = e.payload as Record<string, string>;
  const ct = parseBase64(p.ciphertext_b64!)!;
  ct[0]! ^= 1;
  return { ...e, payload: { ...p, ciphertext_b64: toBase64(ct) } };
}

/** An in-memory Cache holding envelopes, as the routes would serve them. */
class FakeCache implements CacheReader {
  readonly target: CacheTarget;
  readonly held = new Map<string, Envelope>();
  acks: string[][] = [];
  constructor(endpoint: string, envelopes: Envelope[]) {
    this.target = { did: DID, serviceId: `${DID}#cache`, endpoint, keyId: `${DID}#root`, deviceId: '' };
    for (const e of envelopes) this.held.set(e.message_id as string, e);
  }
  async summary() {
    const messages: CacheSummaryItem[] = [...this.held.values()].map((e) => ({
      message_id: e.message_id as string,
      chunked: e.message_group_id !== undefined,
      expires_at: '',
      stored_at: '',
      size_bytes: 1,
      ...(e.message_group_id === undefined
        ? {}
        : { message_group_id: e.message_group_id as string, sequence_number: e.sequence_number as number, total_chunks: e.total_chunks as number }),
    }));
    return { did: DID, count: messages.length, messages };
  }
  async chunks(groupId: string) {
    const chunks = [...this.held.values()]
      .filter((e) => e.message_group_id === groupId)
      .sort((a, b) => (a.sequence_number as number) - (b.sequence_number as number))
      .map((e) => ({ message_id: e.message_id as string, sequence_number: e.sequence_number as number, expires_at: '', envelope: e, proof: {} }));
    return { did: DID, message_group_id: groupId, complete: true, total_chunks: chunks.length, count: chunks.length, chunks };
  }
  async message(id: string) {
    const e = this.held.get(id);
    if (e === undefined) throw Object.assign(new Error('gone'), { code: 'message_not_found' });
    return { state: 'active', message: { message_id: id, recipient: DID, expires_at: '', chunked: false, envelope: e, proof: {} } };
  }
  async ack(ids: readonly string[]) {
    this.acks.push([...ids]);
    return ids.filter((id) => this.held.delete(id));
  }
}

/** A file the fake sink committed. */
interface Written {
  name: string;
  data: Uint8Array;
}

/** A sink collecting committed files in memory; `fail` makes every commit fail as a taken name does. */
function sinkInto(written: Written[], fail = false): FileSink {
  return async (file, key) => {
    const parts: Uint8Array[] = [];
    return {
      write: async (data) => void parts.push(Uint8Array.from(data)),
      async commit() {
        if (fail) throw Object.assign(new Error('name taken'), { code: 'output_exists' });
        written.push({ name: file.name, data: new Uint8Array(Buffer.concat(parts)) });
        return `/out/${key}`;
      },
      abort: async () => void parts.splice(0),
    };
  };
}

const bytes = (n: number, seed: number) => new Uint8Array(n).map((_, i) => (i * seed + 7) & 0xff);

describe('FileReceiver', () => {
  it('writes a file held by two Caches once and acknowledges it at both', async () => {
    const data = bytes(25_000, 13);
    const envs = envelopesOf(data, 'a.bin');
    assert.equal(envs.length, 6);
    const a = new FakeCache('https://a', envs);
    const b = new FakeCache('https://b', envs);
    const written: Written[] = [];
    const r = await new FileReceiver(PLATFORM, [a, b], recipient.privateKey, sinkInto(written)).sweep();
    assert.deepEqual(r.errors, []);
    assert.equal(written.length, 1);
    assert.deepEqual(written[0]!.data, data);
    assert.deepEqual(r.files[0]!.acknowledged, [
      { endpoint: 'https://a', acked: 6 },
      { endpoint: 'https://b', acked: 6 },
    ]);
    assert.equal(a.held.size + b.held.size, 0);
    assert.deepEqual(
      r.caches.map((c) => c.pending),
      [6, 6],
    );
  });

  it('skips a tampered copy, takes the intact one from the next Cache, and reports the bad copy', async () => {
    const data = bytes(20_000, 5);
    const envs = envelopesOf(data, 'b.bin');
    const bad = new FakeCache(
      'https://bad',
      envs.map((e, i) => (i === 1 ? tamper(e) : e)),
    );
    const good = new FakeCache('https://good', envs);
    const written: Written[] = [];
    const r = await new FileReceiver(PLATFORM, [bad, good], recipient.privateKey, sinkInto(written)).sweep();
    assert.equal(written.length, 1);
    assert.deepEqual(written[0]!.data, data);
    assert.deepEqual(
      r.errors.map((e) => [e.code, e.endpoint]),
      [['decryption_failed', 'https://bad']],
    );
  });

  it('writes and acknowledges nothing when every copy fails, or when the sink fails', async () => {
    const envs = envelopesOf(bytes(500, 3), 'c.bin').map(tamper);
    const cache = new FakeCache('https://a', envs);
    const written: Written[] = [];
    const r = await new FileReceiver(PLATFORM, [cache], recipient.privateKey, sinkInto(written)).sweep();
    assert.deepEqual([written.length, cache.acks.length, r.files.length], [0, 0, 0]);
    assert.deepEqual(
      r.errors.map((e) => e.code),
      ['decryption_failed'],
    );

    const ok = new FakeCache('https://a', envelopesOf(bytes(500, 3), 'c.bin'));
    const r2 = await new FileReceiver(PLATFORM, [ok], recipient.privateKey, sinkInto([], true)).sweep();
    assert.deepEqual([ok.acks.length, ok.held.size], [0, 1]);
    assert.deepEqual(
      r2.errors.map((e) => e.code),
      ['output_exists'],
    );

    const r3 = await new FileReceiver(PLATFORM, [ok], null, sinkInto([])).sweep();
    assert.deepEqual(
      r3.errors.map((e) => e.code),
      ['decryption_key_required'],
    );
  });

  it('a live push is written once, its Cache copies acknowledged, and later sweeps only clean up', async () => {
    const [env] = envelopesOf(bytes(100, 9), 'live.bin');
    const a = new FakeCache('https://a', [env!]);
    const b = new FakeCache('https://b', [env!]);
    const written: Written[] = [];
    const rx = new FileReceiver(PLATFORM, [a, b], recipient.privateKey, sinkInto(written));
    const r = await rx.acceptLive(env!);
    assert.equal(r.files[0]!.source, 'live');
    assert.deepEqual(
      r.files[0]!.acknowledged.map((x) => x.acked),
      [1, 1],
    );
    assert.equal((await rx.acceptLive(env!)).files.length, 0, 'a repeated push is ignored');
    b.held.set(env!.message_id as string, env!);
    const again = await rx.sweep();
    assert.deepEqual([again.files.length, written.length, b.held.size], [0, 1, 0], 'a copy still held is acknowledged, not written again');
  });

  it('forgets a written key once no Cache lists it and it is older than WRITTEN_KEPT_MS; a listed one is kept', async () => {
    let now = 1_000_000;
    const nowMs = () => now;
    const [gone, stuck] = [envelopesOf(bytes(100, 5), 'gone.bin')[0]!, envelopesOf(bytes(100, 6), 'stuck.bin')[0]!];
    const a = new FakeCache('https://a', [gone]);
    // a Cache whose acknowledgements fail: its copy stays listed
    const b = new FakeCache('https://b', [stuck]);
    b.ack = () => Promise.reject(new Error('ack refused'));
    const written: Written[] = [];
    const rx = new FileReceiver(PLATFORM, [a, b], recipient.privateKey, sinkInto(written), undefined, { nowMs });
    await rx.sweep();
    assert.deepEqual([written.length, rx.rememberedKeys], [2, 2]);
    now += WRITTEN_KEPT_MS - 1;
    await rx.sweep();
    assert.equal(rx.rememberedKeys, 2, 'too recent: a live push may still come');
    assert.equal((await rx.acceptLive(gone)).files.length, 0, 'its late live push is ignored');
    now += 2;
    await rx.sweep();
    assert.equal(rx.rememberedKeys, 1, 'the key no Cache lists is forgotten, the listed one kept');
    assert.equal(written.length, 2, 'the listed copy is not written again');
    for (let i = 0; i < 50; i++) {
      const env = envelopesOf(bytes(100, 10 + i), `f${i}.bin`)[0]!;
      a.held.set(env.message_id as string, env);
      await rx.sweep();
      now += WRITTEN_KEPT_MS;
    }
    await rx.sweep();
    assert.deepEqual([written.length, rx.rememberedKeys], [52, 1], 'fifty more files written and forgotten');
  });
});
