/** Public keys: signing-key resolution (ledger-rules.md §3.5) and request key forms (http-api.md §0.3). */
import { base58 } from '@scure/base';
import { parseHex, utf8 } from '../base/bytes.js';
import type { DidDocument } from './document.js';

/**
 * Decodes a VM `publicKeyMultibase` as the ledger does: exactly 32 bytes of text → those bytes (hazard);
 * else `z` + base58btc of 32 raw bytes or of `ed01` ‖ 32 bytes. Undefined when it does not decode.
 */
export function decodeSigningKeyMultibase(value: string): Uint8Array | undefined {
  const raw = utf8(value);
  if (raw.length === 32) return raw;
  return decodeZBase58Key(value, 0xed, 0x01);
}

/** `z` + base58btc of 32 bytes, or of the two-byte multicodec prefix ‖ 32 bytes. */
export function decodeZBase58Key(value: string, p0: number, p1: number): Uint8Array | undefined {
  if (!value.startsWith('z')) return undefined;
  let b: Uint8Array;
  try {
    b = base58.decode(value.slice(1));
  } catch {
    return undefined;
  }
  if (b.length === 32) return b;
  if (b.length === 34 && b[0] === p0 && b[1] === p1) return b.slice(2);
  return undefined;
}

/** X25519 key-agreement key: `z` + base58 of 32 bytes or of `ec01` ‖ 32 bytes (http-api.md §6). */
export function decodeX25519Multibase(value: string): Uint8Array | undefined {
  return decodeZBase58Key(value, 0xec, 0x01);
}

/** Request form of a root key: `0x` + 64 hex, bare 64 hex, or `z` + base58 (raw or `ed01`-prefixed). */
export function parseRootPubkey(value: string): Uint8Array | undefined {
  if (/^(0x)?[0-9a-fA-F]{64}$/.test(value)) return parseHex(value);
  return decodeZBase58Key(value, 0xed, 0x01);
}

export function multibaseEd25519(publicKey: Uint8Array, withPrefix = true): string {
  return `z${base58.encode(withPrefix ? Uint8Array.of(0xed, 0x01, ...publicKey) : publicKey)}`;
}

export function multibaseX25519(publicKey: Uint8Array): string {
  return `z${base58.encode(Uint8Array.of(0xec, 0x01, ...publicKey))}`;
}

/**
 * The public key for `signerKeyId` of `did` (§3.5 steps 2–3): `root` → the root key; otherwise the first VM
 * whose id equals it and whose controller is the DID. Undefined when nothing resolves.
 */
export function resolveSigningKey(did: string, rootPubkey: Uint8Array, document: DidDocument | null, signerKeyId: string): Uint8Array | undefined {
  if (signerKeyId === 'root') return rootPubkey;
  const vm = document?.verificationMethod.find((v) => v.id === signerKeyId && v.controller === did);
  return vm ? decodeSigningKeyMultibase(vm.publicKeyMultibase) : undefined;
}
