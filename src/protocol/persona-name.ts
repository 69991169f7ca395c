/** Persona name canonicalisation (ledger-rules.md §8.1). */

/** The canonical name, or undefined when invalid (`InvalidPersona`). */
export function canonicalPersona(raw: string): string | undefined {
  let s = raw.replace(/^[ \t\n\f\r]+|[ \t\n\f\r]+$/g, '');
  if (s.endsWith('.')) s = s.slice(0, -1);
  if (s.length < 1 || s.length > 253) return undefined;
  if (!/^[\x00-\x7f]*$/.test(s)) return undefined;
  s = s.toLowerCase();
  const labels = s.split('.');
  for (const l of labels) {
    if (l.length === 0 || l.length > 63) return undefined;
    if (!/^[a-z0-9-]+$/.test(l) || l.startsWith('-') || l.endsWith('-')) return undefined;
  }
  if (labels.length > 1 && !/[a-z]/.test(labels[labels.length - 1]!)) return undefined;
  return s;
}

/** DNS personas contain a dot; single-label names are "named" personas. */
export function isDnsPersona(canonical: string): boolean {
  return canonical.includes('.');
}
