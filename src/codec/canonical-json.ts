/**
 * Canonical JSON (http-api.md §10.2): JSON.stringify's escaping and number formatting, no whitespace, arrays in
 * order, object keys sorted recursively in UTF-16 code-unit order. Serialised by hand because JS objects
 * enumerate integer-like keys first, whatever order they were inserted in.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    const parts: string[] = [];
    for (const k of Object.keys(o).sort()) {
      if (o[k] === undefined) continue;
      parts.push(`${JSON.stringify(k)}:${canonicalJson(o[k])}`);
    }
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
