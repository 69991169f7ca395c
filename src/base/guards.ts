/** Type guards for untrusted JSON values: a checked narrowing instead of a cast. */

/** A JSON object (not null, not an array). */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** One of `values` (a union of string literals declared as a `const` list). */
export function isOneOf<T extends string>(values: readonly T[], v: unknown): v is T {
  return values.some((x) => x === v);
}

/** An own key of `table` (a union declared by an object's keys). */
export function isKeyOf<O extends object>(table: O, k: unknown): k is keyof O & string {
  return typeof k === 'string' && Object.hasOwn(table, k);
}
