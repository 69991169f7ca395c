/**
 * A request field decoded by a route's parser whose refusal the spec orders after checks that need state (e.g.
 * §4.2: a registration's signature encoding after `did_already_exists`): the parser decodes it and keeps the
 * refusal as a value; the use-case throws it at the spec's point.
 */
import { DdnError } from '../base/errors.js';

export type Deferred<T> = { ok: true; value: T } | { ok: false; error: DdnError };

/** Runs a field parser, keeping its `DdnError` (anything else is thrown as is). */
export function defer<T>(parse: () => T): Deferred<T> {
  try {
    return { ok: true, value: parse() };
  } catch (e) {
    if (e instanceof DdnError) return { ok: false, error: e };
    throw e;
  }
}

/** The decoded value, or the kept refusal thrown. */
export function settle<T>(d: Deferred<T>): T {
  if (!d.ok) throw d.error;
  return d.value;
}
