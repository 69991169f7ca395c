/** The record of valid signatures a pool entry keeps (src/ledger/runtime/verified-signatures.ts). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
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

  it('is not changed when the caller later changes the bytes it passed', () => {
    const v = new VerifiedSignatures();
    const mutable = message.slice();
    v.verify(key.publicKey, mutable, signature);
    mutable[0]! ^= 1;
    assert.equal(v.verify(key.publicKey, mutable, signature), false);
  });
});
