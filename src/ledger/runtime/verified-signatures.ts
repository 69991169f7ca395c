/**
 * Ed25519 signatures already found valid, by their exact public key, message and signature; each pool entry keeps
 * its own. An admission to a shared pool (src/store/postgres/ledger-sync.ts) runs its checks once before the pool
 * lock, recording here, and again under it, where it finds its signatures here and spends no verification while
 * other processes wait; the block that includes the entry, and every re-check of the pool, find them too. Only
 * valid verdicts are kept and a triple's verdict never changes, so every check decides as it would without it.
 */
import { bytesEqual } from '../../base/bytes.js';
import { verifyEd25519 } from '../../crypto/ed25519.js';

export class VerifiedSignatures {
  private readonly valid: (readonly [Uint8Array, Uint8Array, Uint8Array])[] = [];

  /** How many valid signatures are kept. */
  get size(): number {
    return this.valid.length;
  }

  verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
    for (const [k, m, s] of this.valid) {
      if (bytesEqual(s, signature) && bytesEqual(k, publicKey) && bytesEqual(m, message)) return true;
    }
    if (!verifyEd25519(publicKey, message, signature)) return false;
    this.valid.push([publicKey.slice(), message.slice(), signature.slice()]);
    return true;
  }
}
