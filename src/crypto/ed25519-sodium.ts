/**
 * libsodium's Ed25519 (through `sodium-native`, a prebuilt N-API addon): about twice as fast as node:crypto's
 * OpenSSL for both signing and verifying (`npm run bench` reports both rates). Loaded once per thread; when the
 * addon cannot load on a platform, or `DDN_ED25519_BACKEND=openssl` is set, this is `null` and `ed25519.ts`
 * uses node:crypto alone — the verdicts are the same either way.
 */
import { createRequire } from 'node:module';

/** The libsodium calls ddn uses (sodium-native's signatures). */
export interface SodiumEd25519 {
  crypto_sign_seed_keypair(publicKey: Uint8Array, secretKey: Uint8Array, seed: Uint8Array): void;
  crypto_sign_detached(signature: Uint8Array, message: Uint8Array, secretKey: Uint8Array): void;
  crypto_sign_verify_detached(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean;
  /** BLAKE2b, unkeyed, of `output.length` bytes (src/crypto/hash.ts). */
  crypto_generichash(output: Uint8Array, input: Uint8Array): void;
}

/** Which implementation signs and verifies first; `openssl` is node:crypto. */
export type Ed25519BackendName = 'libsodium' | 'openssl';

function load(): { sodium: SodiumEd25519 | null; reason: string | null } {
  // eslint-disable-next-line no-restricted-properties -- read once at load, before any configuration exists (ARCHITECTURE.md)
  if (process.env.DDN_ED25519_BACKEND === 'openssl') return { sodium: null, reason: 'DDN_ED25519_BACKEND=openssl' };
  try {
    return { sodium: createRequire(import.meta.url)('sodium-native') as SodiumEd25519, reason: null };
  } catch (err) {
    return { sodium: null, reason: `sodium-native did not load: ${(err as Error).message}` };
  }
}

const loaded = load();

/** libsodium, or null when node:crypto is used alone. */
export const sodium: SodiumEd25519 | null = loaded.sodium;

/** Why libsodium is not used (null when it is). */
export const sodiumUnavailableReason: string | null = loaded.reason;

/** The backend in use in this thread. */
export const ed25519Backend: Ed25519BackendName = sodium === null ? 'openssl' : 'libsodium';
