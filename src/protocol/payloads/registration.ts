/** Registration v2 signed bytes and request token (ledger-rules.md §4.5, ddn-defined). */
import { concatBytes, utf8 } from '../../base/bytes.js';
import { ScaleWriter } from '../../codec/scale.js';
import type { Profile } from '../profile.js';

export interface RegistrationV2 {
  did: string;
  rootPubkey: Uint8Array;
  alias: string | null;
  documentHash: Uint8Array;
  expiryMs: bigint;
}

/** ASCII `<p>:register:v2|` ‖ SCALE(did, root_pubkey [u8;32], Option<alias>, document_hash, expiry_ms). */
export function registrationSigningBytes(profile: Profile, r: RegistrationV2): Uint8Array {
  const w = new ScaleWriter()
    .str(r.did)
    .raw(r.rootPubkey)
    .option(r.alias, (w2, a) => w2.str(a))
    .raw(r.documentHash)
    .u64(r.expiryMs);
  return concatBytes(utf8(profile.registerPrefix), w.finish());
}

export function registrationToken(expiryMs: bigint): string {
  return `v2:0:${expiryMs.toString()}`;
}

/** Parses `v2:<nonce>:<ms>` in canonical decimal form; undefined when malformed. */
export function parseV2Token(token: string): { nonce: bigint; ms: bigint } | undefined {
  const m = /^v2:(0|[1-9][0-9]*):(0|[1-9][0-9]*)$/.exec(token);
  if (!m) return undefined;
  const nonce = BigInt(m[1]!);
  const ms = BigInt(m[2]!);
  if (nonce >= 1n << 64n || ms >= 1n << 64n) return undefined;
  return { nonce, ms };
}
