/**
 * The two Ed25519 fast paths of src/crypto/ed25519.ts — libsodium (the default) and node:crypto
 * (`DDN_ED25519_BACKEND=openssl`, or where sodium-native cannot load) — give the ZIP-215 verdict on every case,
 * including the small-order and non-canonical encodings only the ZIP-215 re-check accepts, and sign alike.
 * Each backend runs in a child process of its own, since the backend is chosen when the module loads.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { ed25519Backend, sodiumUnavailableReason } from '../../src/crypto/ed25519-sodium.js';
import { keyPairFromSeed } from '../../src/crypto/ed25519.js';

const L = 2n ** 252n + 27742317777372353535851937790883648493n;
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function leBytes(n: bigint, length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = Number((n >> BigInt(8 * i)) & 0xffn);
  return out;
}

function leNumber(b: Uint8Array): bigint {
  let n = 0n;
  for (let i = b.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(b[i]!);
  return n;
}

function flip(b: Uint8Array, at: number): Uint8Array {
  const out = b.slice();
  out[at] = (out[at] ?? 0) ^ 1;
  return out;
}

function zip215(key: Uint8Array, msg: Uint8Array, sig: Uint8Array): boolean {
  try {
    return ed25519.verify(sig, msg, key, { zip215: true });
  } catch {
    return false;
  }
}

interface Case {
  name: string;
  key: string;
  msg: string;
  sig: string;
}

/** Valid, tampered, small-order, non-canonical and out-of-range cases, and valid signatures of random keys. */
function cases(): Case[] {
  const kp = keyPairFromSeed(new Uint8Array(32).fill(7));
  const msg = new TextEncoder().encode('GET\n/cache/messages/did:ddn:x\n1700000000\nnonce');
  const sig = kp.sign(msg);
  const identity = leBytes(1n, 32); // y = 1, the neutral point
  const identityNonCanonical = leBytes(2n ** 255n - 18n, 32); // y = p + 1, the same point
  const rIdentityS0 = new Uint8Array(64);
  rIdentityS0.set(identity, 0);
  const rNonCanonicalS0 = new Uint8Array(64);
  rNonCanonicalS0.set(identityNonCanonical, 0);
  const sPlusL = sig.slice();
  sPlusL.set(leBytes(leNumber(sig.subarray(32)) + L, 32), 32);
  const out: Case[] = [
    { name: 'valid', key: hex(kp.publicKey), msg: hex(msg), sig: hex(sig) },
    { name: 'message changed', key: hex(kp.publicKey), msg: hex(flip(msg, 0)), sig: hex(sig) },
    { name: 'R changed', key: hex(kp.publicKey), msg: hex(msg), sig: hex(flip(sig, 10)) },
    { name: 'S changed', key: hex(kp.publicKey), msg: hex(msg), sig: hex(flip(sig, 40)) },
    { name: 'key changed', key: hex(flip(kp.publicKey, 5)), msg: hex(msg), sig: hex(sig) },
    { name: 'S + L (non-canonical scalar)', key: hex(kp.publicKey), msg: hex(msg), sig: hex(sPlusL) },
    { name: 'small-order key, R = identity, S = 0', key: hex(identity), msg: hex(msg), sig: hex(rIdentityS0) },
    { name: 'non-canonical identity key', key: hex(identityNonCanonical), msg: hex(msg), sig: hex(rIdentityS0) },
    { name: 'non-canonical identity R', key: hex(identity), msg: hex(msg), sig: hex(rNonCanonicalS0) },
    { name: 'key not on the curve', key: 'ff'.repeat(32), msg: hex(msg), sig: hex(sig) },
    { name: 'short key', key: hex(kp.publicKey.subarray(0, 31)), msg: hex(msg), sig: hex(sig) },
    { name: 'short signature', key: hex(kp.publicKey), msg: hex(msg), sig: hex(sig.subarray(0, 63)) },
  ];
  for (let i = 0; i < 16; i++) {
    const k = keyPairFromSeed(randomBytes(32));
    const m = randomBytes(i * 37);
    out.push({ name: `random key ${i}`, key: hex(k.publicKey), msg: hex(m), sig: hex(k.sign(m)) });
  }
  return out;
}

interface ChildAnswer {
  backend: string;
  verdicts: boolean[];
  /** verifyAnyEd25519 of case 0 over [other text, its text] and [other text, other text]. */
  any: [boolean, boolean];
  /** The signature of case 0's message by the seed 7…7 key. */
  signature: string;
}

function runChild(list: Case[], env: Record<string, string>): ChildAnswer {
  const url = new URL('../../src/crypto/ed25519.ts', import.meta.url).href;
  const sodiumUrl = new URL('../../src/crypto/ed25519-sodium.ts', import.meta.url).href;
  const script = `const { verifyEd25519, verifyAnyEd25519, keyPairFromSeed } = await import(${JSON.stringify(url)});
    const { ed25519Backend } = await import(${JSON.stringify(sodiumUrl)});
    const b = (h) => Uint8Array.from(Buffer.from(h, 'hex'));
    const list = JSON.parse(process.env.CASES);
    const verdicts = list.map((c) => verifyEd25519(b(c.key), b(c.msg), b(c.sig)));
    const c0 = list[0];
    const other = new TextEncoder().encode('another text');
    const any = [verifyAnyEd25519(b(c0.key), [other, b(c0.msg)], b(c0.sig)), verifyAnyEd25519(b(c0.key), [other, other], b(c0.sig))];
    const signature = Buffer.from(keyPairFromSeed(new Uint8Array(32).fill(7)).sign(b(c0.msg))).toString('hex');
    console.log(JSON.stringify({ backend: ed25519Backend, verdicts, any, signature }));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, CASES: JSON.stringify(list), ...env },
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as ChildAnswer;
}

describe('Ed25519 backends', () => {
  it('loads libsodium here (sodium-native ships a prebuilt addon for this platform)', () => {
    assert.equal(sodiumUnavailableReason, null);
    assert.equal(ed25519Backend, 'libsodium');
  });

  it('gives the ZIP-215 verdict on every case with libsodium and with node:crypto alone, and signs alike', () => {
    const list = cases();
    const expected = list.map((c) => zip215(Buffer.from(c.key, 'hex'), Buffer.from(c.msg, 'hex'), Buffer.from(c.sig, 'hex')));
    // the edge cases are real edges: ZIP-215 accepts the small-order and non-canonical ones, refuses S + L
    const byName = (name: string) => expected[list.findIndex((c) => c.name === name)];
    assert.equal(byName('valid'), true);
    assert.equal(byName('small-order key, R = identity, S = 0'), true);
    assert.equal(byName('non-canonical identity key'), true);
    assert.equal(byName('S + L (non-canonical scalar)'), false);
    const sodiumRun = runChild(list, {});
    const opensslRun = runChild(list, { DDN_ED25519_BACKEND: 'openssl' });
    assert.equal(sodiumRun.backend, 'libsodium');
    assert.equal(opensslRun.backend, 'openssl');
    for (const run of [sodiumRun, opensslRun]) {
      list.forEach((c, i) => assert.equal(run.verdicts[i], expected[i], `${run.backend}: ${c.name}`));
      assert.deepEqual(run.any, [true, false]);
    }
    assert.equal(sodiumRun.signature, opensslRun.signature);
    assert.equal(sodiumRun.signature, list[0]!.sig);
  });
});
