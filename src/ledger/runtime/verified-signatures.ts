/**
 * Ed25519 signatures already found valid, by their exact public key, message and signature; each pool entry keeps
 * its own. An admission to a shared pool (src/store/postgres/ledger-sync.ts) runs its checks once before the pool
 * lock, recording here, and again under it, where it finds its signatures here and spends no verification while
 * other processes wait; the block that includes the entry, and every re-check of the pool, find them too. Only
 * valid verdicts are kept and a triple's verdict never changes, so every check decides as it would without it.
 *
 * The admitting process stores the {@link digests} of its valid triples with the pending row; another process
 * adopting the row keeps them ({@link vouchedFor}), so the producer's block finds those triples valid without
 * verifying them again. Why that is safe:
 * - the rows are as trusted as the blocks: only Directory processes of the deployment write `ledger_txs`, each
 *   row under the admission lock after the same checks, signatures verified; whoever could write a false digest
 *   there could as well write `ledger_blocks` and `ledger_state`, which every follower applies without executing
 *   anything (and mirrors verify every block by executing it, signatures included, docs/mirrors.md);
 * - a digest binds the exact public key, message and signature (SHA-256 of their fixed-length concatenation), so
 *   it answers only for the very triple the admitting process verified: a block executing on another state than
 *   the admission's (a key rotated meanwhile, another message) asks about another triple, which is verified.
 */
import { createHash } from 'node:crypto';
import { bytesEqual } from '../../base/bytes.js';
import { verifyEd25519 } from '../../crypto/ed25519.js';

/** Bytes of one digest in {@link VerifiedSignatures.digests}. */
const DIGEST_BYTES = 32;

/** SHA-256 of public key (32 bytes) ‖ signature (64) ‖ message: the key and signature have fixed lengths. */
function digestOf(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): string {
  return createHash('sha256').update(publicKey).update(signature).update(message).digest('hex');
}

export class VerifiedSignatures {
  private readonly valid: (readonly [Uint8Array, Uint8Array, Uint8Array])[] = [];
  /** Digests (hex) of triples another process of a shared pool verified ({@link vouchedFor}). */
  private readonly vouched: ReadonlySet<string>;

  constructor(vouched: ReadonlySet<string> = new Set()) {
    this.vouched = vouched;
  }

  /**
   * The record of a pending row another process admitted: the triples of `digests` (as {@link digests} gives
   * them; a trailing partial digest is ignored) count as valid without a verification.
   */
  static vouchedFor(digests: Uint8Array): VerifiedSignatures {
    const set = new Set<string>();
    for (let i = 0; i + DIGEST_BYTES <= digests.length; i += DIGEST_BYTES) {
      set.add(Buffer.from(digests.buffer, digests.byteOffset + i, DIGEST_BYTES).toString('hex'));
    }
    return new VerifiedSignatures(set);
  }

  /** How many valid signatures are kept (verified here or vouched for). */
  get size(): number {
    return this.valid.length + this.vouched.size;
  }

  verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
    for (const [k, m, s] of this.valid) {
      if (bytesEqual(s, signature) && bytesEqual(k, publicKey) && bytesEqual(m, message)) return true;
    }
    const vouched = this.vouched.size > 0 && publicKey.length === 32 && signature.length === 64 && this.vouched.has(digestOf(publicKey, message, signature));
    if (!vouched && !verifyEd25519(publicKey, message, signature)) return false;
    this.valid.push([publicKey.slice(), message.slice(), signature.slice()]);
    return true;
  }

  /** The digests of the triples found valid here, concatenated (stored with a shared pool's pending row). */
  digests(): Uint8Array {
    const out = new Uint8Array(this.valid.length * DIGEST_BYTES);
    this.valid.forEach(([k, m, s], i) => out.set(Buffer.from(digestOf(k, m, s), 'hex'), i * DIGEST_BYTES));
    return out;
  }
}
