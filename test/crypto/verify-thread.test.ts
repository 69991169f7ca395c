/**
 * The verifier thread (src/crypto/verify-thread.ts): batches packed byte for byte, the same verdicts as
 * verifyAnyEd25519 for a whole turn's signatures at once, and no verdict lost when its thread dies.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { keyPairFromSeed, verifyAnyEd25519 } from '../../src/crypto/ed25519.js';
import { packBatch, unpackBatch, type VerifyItem } from '../../src/crypto/verify-batch.js';
import { MAX_THREAD_DEATHS, VerifierThread } from '../../src/crypto/verify-thread.js';
import { DdnError } from '../../src/base/errors.js';

const te = new TextEncoder();
const kp = keyPairFromSeed(new Uint8Array(32).fill(7));
const other = keyPairFromSeed(new Uint8Array(32).fill(8));
const text = te.encode('proof text');
const alt = te.encode('proof text, as sent');
const sig = kp.sign(text);
const altSig = kp.sign(alt);

function flipped(bytes: Uint8Array, at: number): Uint8Array {
  const out = bytes.slice();
  out[at] ^= 1;
  return out;
}

/** (key, texts, signature) cases: valid, valid over the second text, tampered, wrong key, malformed, small order. */
function cases(): VerifyItem[] {
  const identity = new Uint8Array(32);
  identity[0] = 1;
  const smallOrder = new Uint8Array(64);
  smallOrder[0] = 1;
  return [
    { publicKey: kp.publicKey, texts: [text], signature: sig },
    { publicKey: kp.publicKey, texts: [text, alt], signature: altSig },
    { publicKey: kp.publicKey, texts: [flipped(text, 0)], signature: sig },
    { publicKey: kp.publicKey, texts: [text], signature: flipped(sig, 40) },
    { publicKey: other.publicKey, texts: [text], signature: sig },
    { publicKey: kp.publicKey, texts: [], signature: sig },
    { publicKey: kp.publicKey.subarray(0, 31), texts: [text], signature: sig },
    { publicKey: kp.publicKey, texts: [text], signature: sig.subarray(0, 63) },
    { publicKey: new Uint8Array(32).fill(0xff), texts: [text], signature: sig },
    { publicKey: identity, texts: [text], signature: smallOrder },
    { publicKey: kp.publicKey, texts: [new Uint8Array(0), text], signature: sig },
  ];
}

const expected = cases().map((c) => verifyAnyEd25519(c.publicKey, c.texts, c.signature));

describe('verify batch packing', () => {
  it('unpacks what it packed, byte for byte, texts of every length included', () => {
    const items = cases().filter((c) => c.publicKey.length === 32 && c.signature.length === 64);
    const back = unpackBatch(new Uint8Array(packBatch(items)));
    assert.equal(back.length, items.length);
    back.forEach((b, i) => {
      assert.deepEqual([...b.publicKey], [...items[i].publicKey]);
      assert.deepEqual([...b.signature], [...items[i].signature]);
      assert.deepEqual(
        b.texts.map((t) => [...t]),
        items[i].texts.map((t) => [...t]),
      );
    });
  });

  it('lays an item out as count, key, signature, then length-prefixed texts', () => {
    const packed = new Uint8Array(packBatch([{ publicKey: kp.publicKey, texts: [alt], signature: sig }]));
    assert.equal(packed.length, 1 + 32 + 64 + 4 + alt.length);
    assert.equal(packed[0], 1);
    assert.deepEqual([...packed.subarray(1, 33)], [...kp.publicKey]);
    assert.deepEqual([...packed.subarray(33, 97)], [...sig]);
    assert.equal(new DataView(packed.buffer).getUint32(97), alt.length);
    assert.deepEqual([...packed.subarray(101)], [...alt]);
  });
});

describe('VerifierThread', () => {
  const threads: VerifierThread[] = [];
  after(() => Promise.all(threads.map((t) => t.close())));
  const make = (start?: () => Worker, maxPending?: number) => {
    const t = new VerifierThread(start, maxPending);
    threads.push(t);
    return t;
  };

  it('gives verifyAnyEd25519 verdicts for a turn of signatures, in one batch on one thread', async () => {
    const t = make();
    const verdicts = await Promise.all(cases().map((c) => t.verify(c.publicKey, c.texts, c.signature)));
    assert.deepEqual(verdicts, expected);
    assert.ok(expected.includes(true) && expected.includes(false));
    // the malformed ones are refused before the batch, the rest go as one
    assert.equal(t.batches, 1);
    // a later turn reuses the thread
    assert.equal(await t.verify(kp.publicKey, [text], sig), true);
    assert.equal(t.started, 1);
  });

  it('verifies on the pool what a thread that dies had been sent, and replaces the thread', async () => {
    // a thread that ends as soon as it receives a batch
    const dying = () => new Worker("require('node:worker_threads').parentPort.once('message', () => process.exit(3));", { eval: true });
    const t = make(dying);
    assert.deepEqual(await Promise.all(cases().map((c) => t.verify(c.publicKey, c.texts, c.signature))), expected);
    assert.equal(await t.verify(kp.publicKey, [text], sig), true);
    assert.equal(t.started, 2);
    assert.equal(t.fellBackToPool, false);
  });

  it('stays on the pool once threads keep dying', async () => {
    const t = make(() => new Worker('process.exit(1)', { eval: true }));
    const exits: boolean[] = [];
    const causes: unknown[] = [];
    t.onThreadExit = (err, restarted) => {
      exits.push(restarted);
      causes.push(err);
    };
    for (let i = 0; i <= MAX_THREAD_DEATHS; i++) assert.equal(await t.verify(kp.publicKey, [text], sig), true);
    assert.equal(t.fellBackToPool, true);
    assert.deepEqual(exits, [...Array<boolean>(MAX_THREAD_DEATHS).fill(true), false]);
    // a thread that exits without an error is told of by its exit code
    for (const c of causes) assert.match(String((c as Error).message), /exited with code 1/);
    const started = t.started;
    assert.equal(started, MAX_THREAD_DEATHS + 1);
    assert.deepEqual(await Promise.all(cases().map((c) => t.verify(c.publicKey, c.texts, c.signature))), expected);
    assert.equal(t.started, started);
  });

  it("tells of a thread's death by the error it ended on", async () => {
    const t = make(
      () => new Worker("require('node:worker_threads').parentPort.once('message', () => { throw new Error('verifier broke'); });", { eval: true }),
    );
    const told: { err: unknown; restarted: boolean }[] = [];
    t.onThreadExit = (err, restarted) => told.push({ err, restarted });
    assert.equal(await t.verify(kp.publicKey, [text], sig), true);
    assert.equal(told.length, 1);
    const { err, restarted } = told[0]!;
    assert.ok(err instanceof Error);
    assert.equal(err.message, 'verifier broke');
    assert.equal(restarted, true);
  });

  it('refuses signatures beyond its bound with 429 rate_limited, and takes them again once verdicts are out', async () => {
    const t = make(undefined, 2);
    const first = [t.verify(kp.publicKey, [text], sig), t.verify(kp.publicKey, [text, alt], altSig)];
    assert.equal(t.pending, 2);
    await assert.rejects(t.verify(kp.publicKey, [text], sig), (err: unknown) => {
      assert.ok(err instanceof DdnError);
      assert.equal(err.code, 'rate_limited');
      assert.equal(err.details?.retry_after_seconds, 1);
      return true;
    });
    assert.deepEqual(await Promise.all(first), [true, true]);
    assert.equal(t.pending, 0);
    assert.equal(await t.verify(kp.publicKey, [text], sig), true);
    // malformed input is answered at once and never counted
    assert.equal(await t.verify(kp.publicKey.subarray(0, 31), [text], sig), false);
    assert.equal(t.pending, 0);
  });

  it('counts what waits on the pool too', async () => {
    const t = make(() => new Worker('process.exit(1)', { eval: true }), 1);
    for (let i = 0; i <= MAX_THREAD_DEATHS; i++) assert.equal(await t.verify(kp.publicKey, [text], sig), true);
    assert.equal(t.fellBackToPool, true);
    const held = t.verify(kp.publicKey, [text], sig);
    await assert.rejects(t.verify(kp.publicKey, [text], sig), { code: 'rate_limited' });
    assert.equal(await held, true);
    assert.equal(t.pending, 0);
  });

  it('starts its thread on warm(), before any signature', async () => {
    const t = make();
    t.warm();
    assert.equal(t.started, 1);
    assert.equal(await t.verify(kp.publicKey, [text], sig), true);
    assert.equal(t.started, 1);
  });

  it('does not keep an idle process alive, warmed or after a batch', () => {
    const url = new URL('../../src/crypto/verify-thread.ts', import.meta.url).href;
    const script = `const { VerifierThread, verifyOnThread } = await import(${JSON.stringify(url)});
      new VerifierThread().warm();
      const ok = await verifyOnThread(new Uint8Array(32), [new Uint8Array(1)], new Uint8Array(64));
      console.log(String(ok));`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.signal, null, 'the process had to be killed: a thread kept it alive');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), String(verifyAnyEd25519(new Uint8Array(32), [new Uint8Array(1)], new Uint8Array(64))));
  });

  it('answers what it held when closed', async () => {
    const t = make();
    assert.equal(await t.verify(kp.publicKey, [text], sig), true);
    const pending = t.verify(kp.publicKey, [text, alt], altSig);
    await new Promise((r) => setImmediate(r));
    await t.close();
    assert.equal(await pending, true);
  });
});
