/** DID grammar (ledger-rules.md §3.1) and generated DIDs (http-api.md §0.2). */
import { randomBytes } from 'node:crypto';
import { base58 } from '@scure/base';
import { utf8Length } from '../base/bytes.js';
import type { Profile } from './profile.js';

export const MAX_DID_BYTES = 128;
const DID_RE = /^did:([a-z0-9]{1,32}):([1-9A-HJ-NP-Za-km-z]{16,96})$/;

/** True iff `s` matches the full DID grammar (any platform segment). */
export function isDid(s: string): boolean {
  return DID_RE.test(s) && utf8Length(s) <= MAX_DID_BYTES;
}

/** The ledger's DID grammar failure names (§5.5 step 3). */
export function didGrammarError(s: string): 'DidTooLong' | 'InvalidDidFormat' | null {
  if (utf8Length(s) > MAX_DID_BYTES) return 'DidTooLong';
  return DID_RE.test(s) ? null : 'InvalidDidFormat';
}

/**
 * Why `s` is not a DID, for an error's `details`: `{reason: "too_long", max_bytes: 128}` when it exceeds the
 * 128-byte cap (the grammar alone allows 5 + 32 + 96 = 133 characters; the deployed chain caps DIDs at 128 bytes),
 * else `{reason: "invalid_format"}`; null for a DID.
 */
export function didProblem(s: unknown): { reason: 'too_long'; max_bytes: number } | { reason: 'invalid_format' } | null {
  if (typeof s !== 'string') return { reason: 'invalid_format' };
  const e = didGrammarError(s);
  if (e === null) return null;
  return e === 'DidTooLong' ? { reason: 'too_long', max_bytes: MAX_DID_BYTES } : { reason: 'invalid_format' };
}

/** `did:<p>:` + base58 of 16 random bytes. */
export function generateDid(profile: Profile, bytes: Uint8Array = randomBytes(16)): string {
  return `did:${profile.p}:${base58.encode(bytes)}`;
}

/** The DID part of a DID URL (`did:…#frag` → `did:…`). */
export function didOfUrl(url: string): string {
  const i = url.indexOf('#');
  return i < 0 ? url : url.slice(0, i);
}
