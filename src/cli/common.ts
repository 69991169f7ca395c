/** Options and helpers shared by the user commands: which Directory, which profile, waiting, key ids. */
import { messageOf } from '../base/guards.js';
import { readFileSync } from 'node:fs';
import { DirectoryClient } from '../client/directory-client.js';
import type { FetchLike } from '../client/http.js';
import { makeProfile, type Profile } from '../protocol/profile.js';
import { directoryHealth, networkOf, type Network } from './directory-network.js';
import { UsageError, type OptionDef } from './command.js';
import { commandFetch, DEADLINE_OPTIONS, type DeadlineValues } from './request-deadlines.js';

export { commandFetch, deadlines, DEADLINE_OPTIONS, type DeadlineValues } from './request-deadlines.js';

/** `--directory` when neither the option nor `DDN_DIRECTORY_URL` is given: a node on this machine's default port. */
export const DEFAULT_DIRECTORY_URL = 'http://127.0.0.1:8080';

export const DIRECTORY_OPTIONS = {
  directory: { type: 'string', arg: 'URL', help: 'Directory base URL', env: 'DDN_DIRECTORY_URL', default: DEFAULT_DIRECTORY_URL },
  profile: { type: 'string', arg: 'NAME', help: "network profile (default: the Directory's, from GET /health)", env: 'DDN_PROFILE' },
  ...DEADLINE_OPTIONS,
} as const satisfies Record<string, OptionDef>;

export const WAIT_OPTIONS = {
  'no-wait': { type: 'boolean', help: 'return once the change is accepted (202) instead of waiting for finality' },
  timeout: { type: 'string', arg: 'SECONDS', help: 'how long to wait for finality', default: '60' },
} as const satisfies Record<string, OptionDef>;

/** A Directory client and the profile to build payloads with. */
export interface DirectoryContext {
  client: DirectoryClient;
  profile: Profile;
  fetch: FetchLike;
  /** The network the Directory serves (its chain id and genesis hash). */
  network(): Promise<Network>;
}

/** A line on the process's stderr (for helpers that have no command context at hand). */
function stderrLine(line: string): void {
  process.stderr.write(`${line}\n`);
}

/**
 * The Directory of `--directory`, with the profile of `--profile` or, when absent, the one it reports. `info`
 * hears of a request that waits (see {@link commandFetch}).
 */
export async function directoryContext(
  opts: { directory?: string; profile?: string } & DeadlineValues,
  info: (line: string) => void = stderrLine,
): Promise<DirectoryContext> {
  const url = opts.directory ?? DEFAULT_DIRECTORY_URL;
  const fetch = commandFetch(opts, 'the Directory', info);
  let name = opts.profile;
  if (name === undefined) name = (await directoryHealth(url, fetch)).profile;
  let profile: Profile;
  try {
    profile = makeProfile(name);
  } catch {
    throw new UsageError(`invalid profile '${name}'`);
  }
  return { client: new DirectoryClient(url, { fetch, profile }), profile, fetch, network: async () => networkOf(await directoryHealth(url, fetch)) };
}

/** `--timeout` (or the option `flag`) in milliseconds. */
export function timeoutMs(seconds: string | undefined, flag = '--timeout'): number {
  const n = Number(seconds ?? '60');
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${flag} must be a positive number of seconds`);
  return Math.round(n * 1000);
}

/** A positive integer option. */
export function positiveInt(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^[1-9][0-9]*$/.test(v) || !Number.isSafeInteger(Number(v))) throw new UsageError(`--${name} must be a positive integer`);
  return Number(v);
}

/** A full DID URL from `frag`, `#frag` or `did:…#frag`; `root` stays `root` when `allowRoot`. */
export function didUrl(did: string, id: string, allowRoot = false): string {
  if (allowRoot && id === 'root') return id;
  if (id.startsWith('did:')) return id;
  return `${did}#${id.startsWith('#') ? id.slice(1) : id}`;
}

/** `relay`, `cache`, `archive`, `application-control` → the profile's service type; anything else as given. */
export function serviceType(profile: Profile, t: string): string {
  const known: Record<string, string> = {
    relay: profile.relayServiceType,
    cache: profile.cacheServiceType,
    archive: profile.archiveServiceType,
    'application-control': profile.applicationControlServiceType,
  };
  return known[t] ?? t;
}

/** Exactly one DID, from `--did` or the first positional. */
export function oneDid(flag: string | undefined, positionals: readonly string[]): string {
  const did = flag ?? positionals[0];
  if (did === undefined) throw new UsageError('a DID is required');
  return did;
}

/** Reads a JSON object from a file (`-` is not accepted: keys and policies are files you keep). */
export function readJsonObject(path: string, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new UsageError(`cannot read ${what} from ${path}: ${messageOf(e)}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new UsageError(`${path}: ${what} must be a JSON object`);
  return v as Record<string, unknown>;
}
