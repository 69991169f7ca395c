/** verifyEd25519Async (src/crypto/ed25519.ts) gives verifyEd25519's verdict, off the event loop. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ed25519 } from '@noble/curves/ed25519.js';
import { keyPairFromSeed, verifyEd25519, verifyEd25519Async } from '../../src/crypto/ed25519.js';

const kp = keyPairFromSeed(new Uint8Array(32).fill(3));
const msg = new TextEncoder().encode('proof text');
const sig = kp.sign(msg);

function mutated(bytes: Uint8Array, at: number): Uint8Array {
  const out = bytes.slice();
  out[at] = (out[at] ?? 0) ^ 1;
  return out;
}

describe('verifyEd25519Async', () => {
  it('agrees with verifyEd25519 on valid, tampered and malformed inputs', async () => {
    const cases: [Uint8Array, Uint8Array, Uint8Array][] = [
      [kp.publicKey, msg, sig],
      [kp.publicKey, mutated(msg, 0), sig],
      [kp.publicKey, msg, mutated(sig, 10)],
      [kp.publicKey, msg, mutated(sig, 40)],
      [mutated(kp.publicKey, 5), msg, sig],
      [kp.publicKey.subarray(0, 31), msg, sig],
      [kp.publicKey, msg, sig.subarray(0, 63)],
      [new Uint8Array(32).fill(0xff), msg, sig],
    ];
    for (const [k, m, s] of cases) assert.equal(await verifyEd25519Async(k, m, s), verifyEd25519(k, m, s));
    assert.equal(await verifyEd25519Async(kp.publicKey, msg, sig), true);
  });

  it('agrees with verifyEd25519 on a small-order public key', async () => {
    // the identity point with R = identity and s = 0: ZIP-215's cofactored equation holds for any message
    const identity = new Uint8Array(32);
    identity[0] = 1;
    const small = new Uint8Array(64);
    small[0] = 1;
    const expected = (() => {
      try {
        return ed25519.verify(small, msg, identity, { zip215: true });
      } catch {
        return false;
      }
    })();
    assert.equal(verifyEd25519(identity, msg, small), expected);
    assert.equal(await verifyEd25519Async(identity, msg, small), expected);
  });
});
