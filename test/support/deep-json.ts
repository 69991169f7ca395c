/** Deeply nested JSON texts, built as text (no recursive serialiser involved). */

/** `{"a":{"a":…{}…}}` with `levels` objects. */
export function deepObjects(levels: number): string {
  return '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1);
}

/** `[[…[]…]]` with `levels` arrays. */
export function deepArrays(levels: number): string {
  return '['.repeat(levels) + ']'.repeat(levels);
}

/** The JSON text of `body` with member `name` set to the JSON text `nested`. */
export function withMember(body: Record<string, unknown>, name: string, nested: string): string {
  const { [name]: _drop, ...rest } = body;
  const text = JSON.stringify(rest);
  return `${text.length > 2 ? `${text.slice(0, -1)},` : '{'}"${name}":${nested}}`;
}
