/** Options that default from the identity book: `--did` (a DID or a book alias), `--key`, `--decryption-key`. */
import { networkName, type Network } from './directory-network.js';
import { findIdentity, identitiesOn, identityName, readBook, usable, type Identity } from './identity-book.js';
import { UsageError } from './usage-error.js';

/** What an option holds of an identity. */
export type IdentityRole = 'did' | 'key' | 'decryption-key';

interface IdentityOption {
  identity?: IdentityRole;
  /** A `key` that belongs to the DID of the first of these options that is given (a signer's key, e.g. `--operator`). */
  keyOf?: readonly string[];
}

/**
 * Fills `key` options that follow another option's DID (`keyOf`): the key of that DID (or book alias, which is
 * replaced by its DID) in the book of this network. True when something is left for the other identity options.
 */
async function fillSignerKeys(
  options: Readonly<Record<string, IdentityOption>>,
  values: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  here: NetworkLookup,
): Promise<void> {
  for (const [name, o] of Object.entries(options)) {
    if (o.keyOf === undefined || values[name] !== undefined) continue;
    const source = o.keyOf.find((n) => typeof values[n] === 'string');
    if (source === undefined) continue;
    const ref = values[source] as string;
    // `--id` names a DID (or a book alias) only in a DID scope; otherwise it is a persona or an application
    if (source === 'id' && values.scope !== 'did') continue;
    const entry = findIdentity(usable((await bookHere(env, here)).local), ref);
    if (entry === undefined) continue;
    values[name] = entry.key;
    if (ref === entry.alias) values[source] = entry.did;
  }
}

/** The network a command talks to and the URL of its Directory; undefined when it talks to none. */
export type NetworkLookup = () => Promise<{ network: Network; directory: string } | undefined>;

/** The identities of the network the command talks to (all of them when it talks to none). */
export async function bookHere(env: NodeJS.ProcessEnv, here: NetworkLookup): Promise<{ book: Identity[]; local: Identity[]; network?: Network }> {
  const book = readBook(env);
  if (book.length === 0) return { book, local: [] };
  const at = await here();
  if (at === undefined) return { book, local: book };
  return { book, local: identitiesOn(env, book, at.network, at.directory), network: at.network };
}

/**
 * Fills the absent identity options in `values` from the book: the identity named by the `did` option (its DID or
 * alias; an alias is replaced by the DID), or the only identity when the option is absent — among the identities
 * of the network the command talks to (`here`), deleted and deactivated ones left out. Options given on the
 * command line are kept. Reads the book (and asks the network) only when something is missing or the DID is an
 * alias.
 */
export async function fillFromIdentityBook(
  options: Readonly<Record<string, IdentityOption>>,
  values: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  here: NetworkLookup,
): Promise<void> {
  await fillSignerKeys(options, values, env, here);
  const names = Object.entries(options).filter(([, o]) => o.identity !== undefined && o.keyOf === undefined);
  if (names.length === 0) return;
  const didName = names.find(([, o]) => o.identity === 'did')?.[0];
  const given = didName === undefined ? undefined : (values[didName] as string | undefined);
  const missing = names.some(([n]) => values[n] === undefined);
  if (!missing && (given === undefined || given.startsWith('did:'))) return;
  const { book, local, network } = await bookHere(env, here);
  const pickable = usable(local);
  let entry: Identity | undefined;
  if (given !== undefined) {
    entry = findIdentity(pickable, given);
    const elsewhere = entry === undefined && !given.startsWith('did:') ? findIdentity(usable(book), given) : undefined;
    if (elsewhere !== undefined && network !== undefined && !local.includes(elsewhere)) {
      const where = elsewhere.network === undefined ? elsewhere.directory : `${networkName(elsewhere.network)} at ${elsewhere.directory}`;
      throw new UsageError(`'${given}' in the identity book is ${elsewhere.did} of another network (${where}); this Directory serves ${networkName(network)}`);
    }
  } else if (pickable.length === 1) entry = pickable[0];
  else if (pickable.length > 1 && didName !== undefined) {
    throw new UsageError(
      `the identity book holds ${pickable.length} identities${network === undefined ? '' : ' of this network'} (${pickable.map(identityName).join(', ')}): give --${didName} DID|ALIAS`,
    );
  }
  if (entry === undefined) return;
  for (const [name, o] of names) {
    if (o.identity === 'did' && (values[name] === undefined || values[name] === entry.alias)) values[name] = entry.did;
    if (o.identity === 'key' && values[name] === undefined) values[name] = entry.key;
    if (o.identity === 'decryption-key' && values[name] === undefined && entry.key_agreement !== undefined) values[name] = entry.key_agreement;
  }
}
