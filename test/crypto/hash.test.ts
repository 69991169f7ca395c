/**
 * blake2_256 (src/crypto/hash.ts) is libsodium's BLAKE2b with a 32-byte output where libsodium loads: the same bytes
 * as @noble/hashes' BLAKE2b-256 (the reference it replaced on the ledger's hot path), across BLAKE2b's 128-byte block
 * boundaries, on any view of a larger buffer.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { blake2b } from '@noble/hashes/blake2.js';
import { ed25519Backend } from '../../src/crypto/ed25519-sodium.js';
import { blake2_256 } from '../../src/crypto/hash.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('blake2_256', () => {
  it('runs on libsodium here', () => assert.equal(ed25519Backend, 'libsodium'));

  it('equals BLAKE2b-256 of @noble/hashes for inputs of 0 to 1,100 bytes', () => {
    for (const n of [0, 1, 31, 32, 127, 128, 129, 255, 256, 257, 300, 1100]) {
      const data = new Uint8Array(randomBytes(n));
      assert.equal(hex(blake2_256(data)), hex(blake2b(data, { dkLen: 32 })), `${n} bytes`);
    }
  });

  it('hashes only the bytes of a view, not its whole buffer', () => {
    const whole = new Uint8Array(randomBytes(400));
    const view = whole.subarray(100, 250);
    assert.equal(hex(blake2_256(view)), hex(blake2b(view.slice(), { dkLen: 32 })));
  });

  it('gives the known BLAKE2b-256 of the empty input', () => {
    assert.equal(hex(blake2_256(new Uint8Array(0))), '0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8');
  });
});
