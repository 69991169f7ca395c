/**
 * A DID, an alias, or (for `ddn send --to`) either followed by `@persona` (http-api.md §10.1 `to`), resolved to
 * the DID through the Directory (`GET /aliases/{alias}`, §3.6).
 */
import type { DirectoryClient } from '../client/directory-client.js';
import { DirectoryApiError } from '../client/http.js';
import { normalizeAlias } from '../protocol/alias.js';
import { isDid } from '../protocol/did.js';
import { canonicalPersona } from '../protocol/persona-name.js';
import { UsageError } from './command.js';

/** A resolved recipient. */
export interface Recipient {
  did: string;
  /** The normalised alias it was given as, if any. */
  alias?: string;
  /** The canonical persona of `…@persona`, if any. */
  persona?: string;
}

/** Splits `target[@persona]`; `persona` only where allowed (the `to` of a message). */
export function parseRecipient(value: string, flag: string, allowPersona: boolean): { target: string; persona?: string } {
  const at = value.indexOf('@');
  const target = at < 0 ? value : value.slice(0, at);
  if (at < 0) return { target };
  if (!allowPersona) throw new UsageError(`${flag} takes a DID or an alias; '@persona' only addresses a message (ddn send --to)`);
  const persona = canonicalPersona(value.slice(at + 1));
  if (persona === undefined) throw new UsageError(`${flag}: '${value.slice(at + 1)}' is not a valid persona name`);
  return { target, persona };
}

/** A checked recipient, not yet resolved: a DID, or a normalised alias, and the persona. */
export interface RecipientRef {
  did?: string;
  alias?: string;
  persona?: string;
  flag: string;
}

/** Checks the syntax of `value` (no request): usage errors come before any connection. */
export function recipientRef(value: string, flag: string, allowPersona = false): RecipientRef {
  const { target, persona } = parseRecipient(value, flag, allowPersona);
  const base = persona === undefined ? { flag } : { flag, persona };
  if (isDid(target)) return { did: target, ...base };
  const alias = normalizeAlias(target);
  if (!alias.ok) throw new UsageError(`${flag} must be a DID or an alias${allowPersona ? ', optionally followed by @persona' : ''}: '${target}' is neither`);
  return { alias: alias.alias, ...base };
}

/** The DID of a checked recipient (an alias looked up at the Directory), with the persona when given. */
export async function resolveRecipient(client: DirectoryClient, ref: RecipientRef): Promise<Recipient> {
  const base = ref.persona === undefined ? {} : { persona: ref.persona };
  if (ref.did !== undefined) return { did: ref.did, ...base };
  const alias = ref.alias!;
  try {
    const r = await client.aliasLookup(alias);
    return { did: r.did, alias, ...base };
  } catch (e) {
    if (e instanceof DirectoryApiError && e.code === 'alias_not_found') {
      throw Object.assign(new Error(`no DID has the alias '${alias}' at ${client.baseUrl}`), { code: 'alias_not_found' });
    }
    throw e;
  }
}
