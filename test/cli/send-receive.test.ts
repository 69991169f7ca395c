/**
 * End to end through the CLI alone: a `ddn serve` node (ports 0, --allow-private-endpoints) and `ddn` child
 * processes create two DIDs, send a 20 MiB file chunked and encrypted through the Relay, receive it byte for byte
 * from the Cache and acknowledge it, after which the Cache holds nothing for the recipient. A tampered ciphertext
 * is refused with nothing written; a live WebSocket push is written by `receive --follow`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseBase64, parseHex, toBase64 } from '../../src/base/bytes.js';
import { sha256 } from '../../src/crypto/hash.js';
import { buildFileEnvelope } from '../../src/protocol/file-envelopes.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { ddn, spawnDdn, startServe, type ServeNode } from './cli-process.js';

const MiB = 1_048_576;
let dir: string;
let node: ServeNode;
let env: NodeJS.ProcessEnv;
let alice: string;
let bob: string;
let carol: string;
let carolX25519Hex: string;

const path = (name: string) => join(dir, name);
const did = async (args: string[]) => {
  const r = await ddn(['did', 'create', ...args], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.registration_status, 'confirmed');
  return r.json.did as string;
};
const receive = (who: 'bob' | 'carol', out: string) =>
  ddn(['receive', '--did', who === 'bob' ? bob : carol, '--key', path(`${who}.pem`), '--decryption-key', path(`${who}-x.pem`), '--output-dir', out], { env });

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ddn-cli-e2e-'));
  node = await startServe(path('data'), ['--allow-private-endpoints', '--block-time-ms', '20']);
  env = { DDN_DIRECTORY_URL: node.directory, DDN_RELAY_URL: node.relay };
  const keys = [
    ['alice.pem', 'ed25519'],
    ['bob.pem', 'ed25519'],
    ['bob-x.pem', 'x25519'],
    ['carol.pem', 'ed25519'],
    ['carol-x.pem', 'x25519'],
  ] as const;
  for (const [file, type] of keys) {
    const r = await ddn(['key', 'generate', '--type', type, '--out', path(file)], { env });
    assert.equal(r.code, 0, r.stderr);
    if (file === 'carol-x.pem') carolX25519Hex = r.json.public_key_hex as string;
  }
  alice = await did(['--key', path('alice.pem'), '--relay', node.relay, '--cache', node.cache]);
  bob = await did(['--key', path('bob.pem'), '--key-agreement', path('bob-x.pem'), '--relay', node.relay, '--cache', node.cache, '--alias', 'bob']);
  carol = await did(['--key', path('carol.pem'), '--key-agreement', path('carol-x.pem'), '--cache', node.cache]);
});

after(async () => {
  await node?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('ddn send / ddn receive end to end', () => {
  it('creates DIDs whose documents publish the key agreement and the services', async () => {
    const r = await ddn(['did', 'resolve', bob], { env });
    assert.equal(r.code, 0, r.stderr);
    const doc = r.json.document as { keyAgreement: { id: string }[]; service: { id: string; type: string; authorization?: string[] }[] };
    assert.deepEqual(
      doc.keyAgreement.map((k) => k.id),
      [`${bob}#x25519-1`],
    );
    assert.deepEqual(
      doc.service.map((s) => s.type),
      ['PlatformRelayService', 'PlatformCacheService'],
    );
    assert.deepEqual(doc.service[1]!.authorization, [`${bob}#root`]);
    assert.deepEqual(r.json.aliases, ['bob']);
    assert.notEqual(alice, bob);
  });

  it('sends 20 MiB chunked and encrypted, receives it byte-identical, acknowledges it, and the Cache is empty', async () => {
    const data = randomBytes(20 * MiB);
    writeFileSync(path('big.bin'), data);
    const sent = await ddn(['send', '--to', bob, '--input', path('big.bin')], { env });
    assert.equal(sent.code, 0, sent.stderr);
    assert.equal(sent.json.encrypted, true);
    assert.equal(sent.json.chunked, true);
    assert.equal(sent.json.total_chunks, 20);
    assert.equal(sent.json.code, 'chunk_set_delivered');
    assert.equal(sent.json.sha256, Buffer.from(sha256(data)).toString('hex'));

    const out = path('out');
    mkdirSync(out);
    const got = await receive('bob', out);
    assert.equal(got.code, 0, got.stderr);
    assert.equal(got.json.received, 1);
    const files = got.json.files as { path: string; size_bytes: number; message_ids: string[]; acknowledged: { acked: number }[] }[];
    assert.equal(files[0]!.size_bytes, 20 * MiB);
    assert.deepEqual([...files[0]!.message_ids].sort(), [...(sent.json.message_ids as string[])].sort());
    assert.deepEqual(
      files[0]!.acknowledged.map((a) => a.acked),
      [20],
    );
    assert.ok(readFileSync(join(out, 'big.bin')).equals(data), 'the received file is byte-identical');
    assert.equal(statSync(join(out, 'big.bin')).mode & 0o777, 0o600);

    const again = await receive('bob', out);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.json.received, 0);
    assert.deepEqual(
      (again.json.caches as { pending: number }[]).map((c) => c.pending),
      [0],
      'the Cache holds nothing for the recipient',
    );
  });

  it('refuses a tampered ciphertext: clear error, exit 1, nothing written, nothing acknowledged', async () => {
    const to = carol;
    const file = Buffer.from('this file is altered in transit');
    const built = buildFileEnvelope(
      PLATFORM,
      {
        to,
        messageId: randomUUID(),
        timestamp: new Date().toISOString(),
        ttl: '1h',
        recipient: { keyId: `${to}#x25519-1`, publicKey: parseHex(carolX25519Hex)! },
        record: { name: 'tampered.txt', mediaType: 'text/plain', sizeBytes: file.length, sha256: sha256(file), groupId: '', sequence: 0, total: 1, data: file },
      },
      { maxHttpEnvelopeBytes: 26_214_400, maxUnchunkedMessageBytes: 16_777_216, maxChunkBytes: 2_097_152 },
    );
    const payload = built.envelope.payload as Record<string, string>;
    const ct = parseBase64(payload.ciphertext_b64!)!;
    ct[5]! ^= 0xff;
    const envelope: Record<string, unknown> = { ...built.envelope, payload: { ...payload, ciphertext_b64: toBase64(ct) } };
    const res = await fetch(`${node.relay}/relay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(envelope) });
    assert.equal(res.status, 202, await res.text());

    const out = path('out-tampered');
    mkdirSync(out);
    const got = await receive('carol', out);
    assert.equal(got.code, 1);
    assert.equal(got.json.received, 0);
    const errors = got.json.errors as { code: string; message: string; message_key: string }[];
    assert.deepEqual(
      errors.map((e) => e.code),
      ['decryption_failed'],
    );
    assert.equal(errors[0]!.message_key, envelope.message_id);
    assert.match(got.stderr, /decryption failed/);
    assert.deepEqual(readdirSync(out), [], 'nothing written');
    assert.deepEqual(
      (got.json.caches as { pending: number }[]).map((c) => c.pending),
      [1],
      'the tampered copy is not acknowledged',
    );
  });

  it('receive --follow writes a live push and acknowledges the Cache copy', async () => {
    const out = path('out-live');
    mkdirSync(out);
    const follower = spawnDdn(
      ['receive', '--did', bob, '--key', path('bob.pem'), '--decryption-key', path('bob-x.pem'), '--output-dir', out, '--follow', '--interval', '3600'],
      { env },
    );
    try {
      await follower.waitForStderr('following;');
      const sent = await ddn(['send', '--to', bob, '--input', '-', '--name', 'note.txt', '--media-type', 'text/plain'], {
        env,
        stdin: Buffer.from('hello, live'),
      });
      assert.equal(sent.code, 0, sent.stderr);
      assert.equal(sent.json.chunked, false);
      await follower.waitForStderr('wrote ');
    } finally {
      follower.proc.kill('SIGINT');
    }
    const code = await follower.exit;
    const result = JSON.parse(follower.stdout()) as {
      received: number;
      files: { source: string; name: string; acknowledged: { acked: number }[] }[];
      errors: unknown[];
    };
    assert.equal(code, 0, follower.stderr());
    assert.deepEqual(result.errors, []);
    assert.equal(result.received, 1, 'written once, although both the live push and the Cache copy offered it');
    assert.equal(result.files[0]!.source, 'live');
    assert.deepEqual(
      result.files[0]!.acknowledged.map((a) => a.acked),
      [1],
      'the Cache copy is acknowledged',
    );
    assert.deepEqual(readdirSync(out), ['note.txt']);
    assert.equal(readFileSync(join(out, 'note.txt'), 'utf8'), 'hello, live');
  });

  it('receive --follow receives live for a DID whose only service is a Relay service authorizing its key', async () => {
    for (const [file, type] of [
      ['dave.pem', 'ed25519'],
      ['dave-x.pem', 'x25519'],
    ] as const) {
      const k = await ddn(['key', 'generate', '--type', type, '--out', path(file)], { env });
      assert.equal(k.code, 0, k.stderr);
    }
    const dave = await did(['--key', path('dave.pem'), '--key-agreement', path('dave-x.pem')]);
    const added = await ddn(
      [
        'did',
        'service',
        'add',
        '--did',
        dave,
        '--key',
        path('dave.pem'),
        '--id',
        'relay',
        '--type',
        'relay',
        '--endpoint',
        node.relay,
        '--authorization',
        'root',
      ],
      { env },
    );
    assert.equal(added.code, 0, added.stderr);
    const none = await ddn(['send', '--to', dave, '--input', '-', '--name', 'early.txt'], { env, stdin: Buffer.from('nobody listens') });
    assert.notEqual(none.code, 0, 'no Cache service and no session: nothing to deliver to');
    assert.match(JSON.stringify(none.json) + none.stderr, /no_delivery_service/);
    const out = path('out-relay-only');
    mkdirSync(out);
    const follower = spawnDdn(
      ['receive', '--did', dave, '--key', path('dave.pem'), '--decryption-key', path('dave-x.pem'), '--output-dir', out, '--follow', '--interval', '3600'],
      { env },
    );
    try {
      await follower.waitForStderr('following;');
      const sent = await ddn(['send', '--to', dave, '--input', '-', '--name', 'note.txt', '--media-type', 'text/plain'], {
        env,
        stdin: Buffer.from('hello, relay only'),
      });
      assert.equal(sent.code, 0, sent.stderr);
      assert.equal(sent.json.code, 'delivered');
      await follower.waitForStderr('wrote ');
    } finally {
      follower.proc.kill('SIGINT');
    }
    assert.equal(await follower.exit, 0, follower.stderr());
    assert.equal(readFileSync(join(out, 'note.txt'), 'utf8'), 'hello, relay only');
  });
});
