/** Alias normalisation (ledger-rules.md §3.6). */

export type AliasError = 'InvalidAlias' | 'AliasTooLong';
export const MAX_ALIAS_BYTES = 64;

/** Returns the normalised alias, or the ledger error name. */
export function normalizeAlias(raw: string): { ok: true; alias: string } | { ok: false; error: AliasError } {
  const trimmed = raw.replace(/^[ \t\n\f\r]+|[ \t\n\f\r]+$/g, '');
  if (trimmed.length === 0) return { ok: false, error: 'InvalidAlias' };
  // Every byte ASCII (a non-ASCII code unit means a multi-byte UTF-8 sequence).
  if (!/^[\x00-\x7f]*$/.test(trimmed)) return { ok: false, error: 'InvalidAlias' };
  const lower = trimmed.toLowerCase();
  if (!/^[a-z0-9_.-]+$/.test(lower)) return { ok: false, error: 'InvalidAlias' };
  if (lower.length > MAX_ALIAS_BYTES) return { ok: false, error: 'AliasTooLong' };
  return { ok: true, alias: lower };
}
