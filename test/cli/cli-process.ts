/** Runs `ddn` as a child process (test/support/ddn-command.ts: no build needed) and a `ddn serve` node for CLI tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkedUrls, pendingProxy, type PendingProxy } from '../support/checked-proxy.js';
import { ddnArgv } from '../support/ddn-command.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The identity book of the children of this test file (never the user's ~/.config/ddn); removed at exit. */
export const TEST_CONFIG_HOME = mkdtempSync(join(tmpdir(), 'ddn-cli-config-'));
process.on('exit', () => rmSync(TEST_CONFIG_HOME, { recursive: true, force: true }));

/** A running `ddn` child. */
export interface DdnChild {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  exit: Promise<number | null>;
  /** Resolves when stderr contains `text`; rejects if the child exits first. */
  waitForStderr(text: string): Promise<void>;
}

/**
 * Starts `ddn …args` in `cwd` (default the repository root); `entry` runs that built `ddn` (plain JavaScript, see
 * ddn-bundle.ts) instead of {@link ddnArgv}'s, which may be the sources through tsx, whose loader alone takes ~130
 * MiB of memory.
 */
export function spawnDdn(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; stdin?: Buffer; entry?: string } = {}): DdnChild {
  const proc = spawn(process.execPath, [...(opts.entry === undefined ? ddnArgv() : [opts.entry]), ...args], {
    cwd: opts.cwd ?? ROOT,
    env: { ...process.env, XDG_CONFIG_HOME: TEST_CONFIG_HOME, ...opts.env },
    stdio: [opts.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  if (opts.stdin) proc.stdin!.end(opts.stdin);
  let out = '';
  let err = '';
  const waiters: { text: string; resolve(): void }[] = [];
  proc.stdout!.setEncoding('utf8').on('data', (s: string) => (out += s));
  proc.stderr!.setEncoding('utf8').on('data', (s: string) => {
    err += s;
    for (const w of waiters.splice(0)) {
      if (err.includes(w.text)) w.resolve();
      else waiters.push(w);
    }
  });
  const exit = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)));
  return {
    proc,
    stdout: () => out,
    stderr: () => err,
    exit,
    waitForStderr: (text) =>
      new Promise<void>((resolve, reject) => {
        if (err.includes(text)) return resolve();
        waiters.push({ text, resolve });
        void exit.then((code) => reject(new Error(`ddn exited ${code} before printing '${text}':\n${err}`)));
      }),
  };
}

/** The outcome of a finished `ddn` command: exit code, its one JSON result, and stderr. */
export interface DdnResult {
  code: number | null;
  json: Record<string, unknown>;
  stderr: string;
}

/** Runs `ddn …args` to completion and parses its single stdout line. */
export async function ddn(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; stdin?: Buffer } = {}): Promise<DdnResult> {
  const child = spawnDdn(args, opts);
  const code = await child.exit;
  const lines = child
    .stdout()
    .split('\n')
    .filter((l) => l !== '');
  if (lines.length !== 1) throw new Error(`expected one JSON line from ddn ${args.join(' ')}, got ${lines.length}:\n${child.stdout()}\n${child.stderr()}`);
  return { code, json: JSON.parse(lines[0]!) as Record<string, unknown>, stderr: child.stderr() };
}

/** A `ddn serve` child on ports 0 and its URLs (contract-checking proxies' in front of its roles). */
export interface ServeNode {
  directory: string;
  relay: string;
  cache: string;
  stop(): Promise<void>;
}

/**
 * Starts `ddn serve` on free ports with `extra` flags and waits for its listening line. Its roles are reached through
 * contract-checking proxies (test/support/checked-proxy.ts), opened first: the Relay's and the Cache's proxies are the
 * node's public URLs (unless `extra` names its own), so DID documents, proofs and node signatures name them.
 */
export async function startServe(dataDir: string, extra: string[] = []): Promise<ServeNode> {
  const pending: Partial<Record<'directory' | 'relay' | 'cache', PendingProxy>> = {};
  const publicUrls: string[] = [];
  for (const role of ['relay', 'cache'] as const) {
    if (extra.includes(`--public-${role}-url`)) continue;
    const proxy = await pendingProxy();
    pending[role] = proxy;
    publicUrls.push(`--public-${role}-url`, proxy.url);
  }
  const serve = ['serve', '--data-dir', dataDir, '--directory-port', '0', '--relay-port', '0', '--cache-port', '0', '--log-level', 'warn'];
  const child = spawnDdn([...serve, ...publicUrls, ...extra]);
  const first = await new Promise<string>((resolve, reject) => {
    child.proc.stdout!.on('data', () => {
      const nl = child.stdout().indexOf('\n');
      if (nl >= 0) resolve(child.stdout().slice(0, nl));
    });
    void child.exit.then((code) => reject(new Error(`ddn serve exited ${code}:\n${child.stderr()}`)));
  }).catch((e: unknown) => {
    for (const p of Object.values(pending)) p.close();
    throw e;
  });
  const line = JSON.parse(first) as Record<string, string>;
  const urls = await checkedUrls({ directory: line.directory_url!, relay: line.relay_url!, cache: line.cache_url! }, child.proc, pending);
  return {
    directory: urls.directory!,
    relay: urls.relay!,
    cache: urls.cache!,
    async stop() {
      child.proc.kill('SIGTERM');
      await child.exit;
    },
  };
}
