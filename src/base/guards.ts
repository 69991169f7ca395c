/** Type guards for untrusted JSON values: a checked narrowing instead of a cast. */

/** A JSON object (not null, not an array). */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The member `name` of `v` when `v` is an object (an error's `code`, say); undefined otherwise. */
export function memberOf(v: unknown, name: string): unknown {
  return isJsonObject(v) ? v[name] : undefined;
}

/** An error's `code` when it is a string (Node's `ENOENT`, SQLite's `SQLITE_FULL`, PostgreSQL's SQLSTATE). */
export function errorCodeOf(e: unknown): string | undefined {
  const code = memberOf(e, 'code');
  return typeof code === 'string' ? code : undefined;
}

/** What `e` says: an `Error`'s message, else `e` as text (a thrown string, say). */
export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** One of `values` (a union of string literals declared as a `const` list). */
export function isOneOf<T extends string>(values: readonly T[], v: unknown): v is T {
  return values.some((x) => x === v);
}

/** An own key of `table` (a union declared by an object's keys). */
export function isKeyOf<O extends object>(table: O, k: unknown): k is keyof O & string {
  return typeof k === 'string' && Object.hasOwn(table, k);
}
