/**
 * The local identity book: the DIDs `ddn did create` registered from this machine, with the paths of their key
 * files and their alias, in `$XDG_CONFIG_HOME/ddn/identities.json` (default `~/.config/ddn/`). Generated key files
 * go to `keys/` beside it, never into the working directory. The book holds paths, never key material.
 *
 * Every identity belongs to a network (the chain id and genesis hash of the Directory it was registered at): an
 * alias means the identity of the network a command talks to, so `carol` on a test node and `carol` on another
 * never collide. Identities recorded before the book knew networks (version 1) carry only their Directory's URL;
 * they are placed in that Directory's network the first time a command talks to it (nothing is dropped). A DID
 * deleted or deactivated through `ddn` is marked (`status`) and no longer picked.
 */
import { errorCodeOf, messageOf } from '../base/guards.js';
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { sameNetwork, type Network } from './directory-network.js';

/** One identity of the book. */
export interface Identity {
  did: string;
  alias?: string;
  /** Absolute path of the Ed25519 root key file. */
  key: string;
  /** Absolute path of the X25519 decryption key file, when the DID has a key agreement made here. */
  key_agreement?: string;
  /** The root public key (multibase): a second DID for the same key is refused unless asked for. */
  root_pubkey: string;
  directory: string;
  profile: string;
  /** The network the DID lives in; absent in a book written before networks were recorded (see the module comment). */
  network?: Network;
  tx_hash: string;
  created_at: string;
  /** Set once `ddn did delete` or `ddn did deactivate` was accepted for it: never picked again. */
  status?: 'deleted' | 'deactivated';
  status_at?: string;
}

/** A book that cannot be read or used; `code` says why. */
export class IdentityBookError extends Error {
  constructor(
    readonly code: 'identity_book_unreadable' | 'key_already_registered',
    message: string,
  ) {
    super(message);
    this.name = 'IdentityBookError';
  }
}

/** `$XDG_CONFIG_HOME/ddn`, or `~/.config/ddn` when it is unset or not absolute (as the XDG spec says). */
export function configDir(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg !== undefined && isAbsolute(xdg) ? xdg : join(env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir(), '.config');
  return join(base, 'ddn');
}

/** Where generated key files go (created with mode 0700). */
export function keysDir(env: NodeJS.ProcessEnv): string {
  const dir = join(configDir(env), 'keys');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** The book's file. */
export function bookPath(env: NodeJS.ProcessEnv): string {
  return join(configDir(env), 'identities.json');
}

/** Every identity of the book (none when it does not exist yet). */
export function readBook(env: NodeJS.ProcessEnv): Identity[] {
  const path = bookPath(env);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if (errorCodeOf(e) === 'ENOENT') return [];
    throw new IdentityBookError('identity_book_unreadable', `cannot read ${path}: ${messageOf(e)}`);
  }
  try {
    const v = JSON.parse(text) as { identities?: unknown };
    if (!Array.isArray(v.identities)) throw new Error('no "identities" list');
    return v.identities as Identity[];
  } catch (e) {
    throw new IdentityBookError('identity_book_unreadable', `${path} is not an identity book: ${messageOf(e)}`);
  }
}

/** Writes the whole book (to a temporary file, then renamed; mode 0600); its path. */
function writeBook(env: NodeJS.ProcessEnv, identities: readonly Identity[]): string {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = bookPath(env);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ version: 2, identities }, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
  return path;
}

/** True when `i` is the identity `did` of `network` (an identity without a network matches any). */
function isEntry(i: Identity, did: string, network: Network | undefined): boolean {
  return i.did === did && (i.network === undefined || network === undefined || sameNetwork(i.network, network));
}

/** Adds `identity` to the book, replacing an entry of the same DID in the same network. */
export function addIdentity(env: NodeJS.ProcessEnv, identity: Identity): string {
  return writeBook(env, [...readBook(env).filter((i) => !isEntry(i, identity.did, identity.network)), identity]);
}

/** Marks the identity `did` of `network` deleted or deactivated; false when the book does not hold it. */
export function markIdentity(env: NodeJS.ProcessEnv, did: string, network: Network | undefined, status: 'deleted' | 'deactivated', now: Date): boolean {
  const book = readBook(env);
  const hit = book.filter((i) => isEntry(i, did, network));
  if (hit.length === 0) return false;
  for (const i of hit) {
    i.status = status;
    i.status_at = now.toISOString();
  }
  writeBook(env, book);
  return true;
}

/** `url` without trailing slashes (how Directory URLs are compared). */
function baseUrl(url: string): string {
  return url.replace(/\/+$/, '');
}

/**
 * The identities of `network`, whose Directory is at `directory`. Identities without a network whose Directory is
 * `directory` are placed in `network` and the book is saved (the migration of a version-1 book).
 */
export function identitiesOn(env: NodeJS.ProcessEnv, book: Identity[], network: Network, directory: string): Identity[] {
  const legacy = book.filter((i) => i.network === undefined && baseUrl(i.directory) === baseUrl(directory));
  if (legacy.length > 0) {
    for (const i of legacy) i.network = network;
    writeBook(env, book);
  }
  return book.filter((i) => sameNetwork(i.network, network));
}

/** Identities that may be picked: not deleted nor deactivated. */
export function usable(book: readonly Identity[]): Identity[] {
  return book.filter((i) => i.status === undefined);
}

/** The identity whose DID or alias is `didOrAlias`. */
export function findIdentity(book: readonly Identity[], didOrAlias: string): Identity | undefined {
  return book.find((i) => i.did === didOrAlias) ?? book.find((i) => i.alias !== undefined && i.alias === didOrAlias);
}

/** The identity registered with the root public key `rootPubkey`, if any. */
export function identityWithKey(book: readonly Identity[], rootPubkey: string): Identity | undefined {
  return book.find((i) => i.root_pubkey === rootPubkey);
}

/** How an identity is named in messages: `alias (did)` or the DID. */
export function identityName(i: Identity): string {
  return i.alias === undefined ? i.did : `${i.alias} (${i.did})`;
}

/** An absolute path (the book must not depend on the directory a command ran in). */
export function absolute(path: string): string {
  return resolve(path);
}
