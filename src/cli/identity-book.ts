/**
 * The local identity book: the DIDs `ddn did create` registered from this machine, with the paths of their key
 * files and their alias, in `$XDG_CONFIG_HOME/ddn/identities.json` (default `~/.config/ddn/`). Generated key files
 * go to `keys/` beside it, never into the working directory. The book holds paths, never key material.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';

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
  tx_hash: string;
  created_at: string;
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
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new IdentityBookError('identity_book_unreadable', `cannot read ${path}: ${(e as Error).message}`);
  }
  try {
    const v = JSON.parse(text) as { identities?: unknown };
    if (!Array.isArray(v.identities)) throw new Error('no "identities" list');
    return v.identities as Identity[];
  } catch (e) {
    throw new IdentityBookError('identity_book_unreadable', `${path} is not an identity book: ${(e as Error).message}`);
  }
}

/** Adds `identity` to the book (written to a temporary file, then renamed; mode 0600). */
export function addIdentity(env: NodeJS.ProcessEnv, identity: Identity): string {
  const identities = [...readBook(env).filter((i) => i.did !== identity.did), identity];
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = bookPath(env);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ identities }, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
  return path;
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
