/** Options that default from the identity book: `--did` (a DID or a book alias), `--key`, `--decryption-key`. */
import { findIdentity, identityName, readBook, type Identity } from './identity-book.js';
import { UsageError } from './usage-error.js';

/** What an option holds of an identity. */
export type IdentityRole = 'did' | 'key' | 'decryption-key';

interface IdentityOption {
  identity?: IdentityRole;
}

/**
 * Fills the absent identity options in `values` from the book: the identity named by the `did` option (its DID or
 * alias; an alias is replaced by the DID), or the book's only identity when the option is absent. Options given
 * on the command line are kept. Reads the book only when something is missing or the DID is an alias.
 */
export function fillFromIdentityBook(options: Readonly<Record<string, IdentityOption>>, values: Record<string, unknown>, env: NodeJS.ProcessEnv): void {
  const names = Object.entries(options).filter(([, o]) => o.identity !== undefined);
  if (names.length === 0) return;
  const didName = names.find(([, o]) => o.identity === 'did')?.[0];
  const given = didName === undefined ? undefined : (values[didName] as string | undefined);
  const missing = names.some(([n]) => values[n] === undefined);
  if (!missing && (given === undefined || given.startsWith('did:'))) return;
  const book = readBook(env);
  let entry: Identity | undefined;
  if (given !== undefined) entry = findIdentity(book, given);
  else if (book.length === 1) entry = book[0];
  else if (book.length > 1 && didName !== undefined) {
    throw new UsageError(`the identity book holds ${book.length} identities (${book.map(identityName).join(', ')}): give --${didName} DID|ALIAS`);
  }
  if (entry === undefined) return;
  for (const [name, o] of names) {
    if (o.identity === 'did' && (values[name] === undefined || values[name] === entry.alias)) values[name] = entry.did;
    if (o.identity === 'key' && values[name] === undefined) values[name] = entry.key;
    if (o.identity === 'decryption-key' && values[name] === undefined && entry.key_agreement !== undefined) values[name] = entry.key_agreement;
  }
}
