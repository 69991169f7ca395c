/** The record of valid signatures a pool entry keeps (src/ledger/runtime/verified-signatures.ts). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { VerifiedSignatures } from '../../src/ledger/runtime/verified-signatures.js';
import { seedKey } from './harness.js';

describe('VerifiedSignatures', () => {
  const key = seedKey(5);
  const message = new TextEncoder().encode('an admission');
  const signature = key.sign(message);

  it('keeps a valid signature once and answers it again as valid', () => {
    const v = new VerifiedSignatures();
    assert.equal(v.verify(key.publicKey, message, signature), true);
    assert.equal(v.verify(key.publicKey, message, signature), true);
    assert.equal(v.size, 1);
  });

  it('refuses, and never keeps, a signature that differs from a kept one in key, message or signature', () => {
    const v = new VerifiedSignatures();
    v.verify(key.publicKey, message, signature);
    const tampered = signature.slice();
    tampered[0]! ^= 1;
    assert.equal(v.verify(key.publicKey, message, tampered), false);
    assert.equal(v.verify(seedKey(6).publicKey, message, signature), false);
    assert.equal(v.verify(key.publicKey, new TextEncoder().encode('another admission'), signature), false);
    assert.equal(v.size, 1);
  });

  it("answers as valid, without verifying, exactly the triples another process's digests vouch for", () => {
    const admitted = new VerifiedSignatures();
    admitted.verify(key.publicKey, message, signature);
    const digests = admitted.digests();
    assert.equal(digests.length, 32);
    const adopted = VerifiedSignatures.vouchedFor(digests);
    assert.equal(adopted.size, 1, 'a vouched entry counts as verified');
    assert.equal(adopted.verify(key.publicKey, message, signature), true);
    const tampered = signature.slice();
    tampered[5]! ^= 1;
    assert.equal(adopted.verify(key.publicKey, message, tampered), false);
    assert.equal(adopted.verify(seedKey(6).publicKey, message, signature), false, 'another key (a rotated one) is verified');
    assert.equal(adopted.verify(key.publicKey, new TextEncoder().encode('another admission'), signature), false);
    // the digest alone decides: a triple it names is taken as valid without a verification (the rows are trusted)
    const forged = new Uint8Array(64).fill(7);
    const named = createHash('sha256').update(key.publicKey).update(forged).update(message).digest();
    assert.equal(new VerifiedSignatures().verify(key.publicKey, message, forged), false);
    assert.equal(VerifiedSignatures.vouchedFor(new Uint8Array(named)).verify(key.publicKey, message, forged), true);
  });

  it('vouches for nothing with no digests, or with a partial one', () => {
    for (const d of [new Uint8Array(0), new Uint8Array(31)]) {
      const v = VerifiedSignatures.vouchedFor(d);
      assert.equal(v.size, 0);
      assert.equal(v.verify(key.publicKey, message, new Uint8Array(64)), false);
    }
  });

  it('is not changed when the caller later changes the bytes it passed', () => {
    const v = new VerifiedSignatures();
    const mutable = message.slice();
    v.verify(key.publicKey, mutable, signature);
    mutable[0]! ^= 1;
    assert.equal(v.verify(key.publicKey, mutable, signature), false);
  });
});
