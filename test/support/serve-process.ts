/**
 * `ddn serve` as a real child process (test/support/ddn-command.ts: no build needed), for tests that kill processes: resolves
 * once the node prints its listening line, with the URL of each role and the child's pid. The URLs are those of
 * contract-checking proxies (test/support/checked-proxy.ts) in front of the child's roles: every answer a suite
 * reads and every request body it sends through them is checked against the role's OpenAPI document. `direct`
 * holds the child's own URLs, for the suites that must reach the child itself (see CONTRIBUTING.md).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { checkedUrls } from './checked-proxy.js';
import { ddnArgv } from './ddn-command.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

type RoleUrls = { directory?: string; relay?: string; cache?: string };

export interface ServeProcess {
  readonly proc: ChildProcess;
  readonly pid: number;
  /** Each role's URL: a contract-checking proxy's in front of the child. */
  readonly urls: RoleUrls;
  /** Each role's URL on the child itself, unchecked. */
  readonly direct: RoleUrls;
  /** Resolves when the child has exited (for any reason). */
  readonly exited: Promise<unknown>;
  /** What the child wrote to stderr so far. */
  stderr(): string;
}

/** Runs `ddn <command> …args` to its end (for a start that must fail): its exit code and what it wrote to stderr. */
export function ddnToExit(args: string[], command = 'serve'): Promise<{ code: number | null; stderr: string }> {
  const proc = spawn(process.execPath, [...ddnArgv(), command, ...args], {
    cwd: ROOT,
    env: envWithoutDdn(),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  return new Promise((resolve) => proc.on('close', (code) => resolve({ code, stderr })));
}

function envWithoutDdn(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('DDN_')) env[k] = v;
  return env;
}

/** Starts `ddn serve …args` (or another command that prints the same listening line, e.g. `mirror`); DDN_* variables of this process are not passed on. */
export function serveProcess(args: string[], command = 'serve'): Promise<ServeProcess> {
  const proc = spawn(process.execPath, [...ddnArgv(), command, ...args], {
    cwd: ROOT,
    env: envWithoutDdn(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => proc.on('close', resolve));
  let err = '';
  proc.stderr!.setEncoding('utf8').on('data', (s: string) => (err += s));
  return new Promise((resolve, reject) => {
    let out = '';
    let listening = false;
    proc.stdout!.setEncoding('utf8').on('data', (s: string) => {
      out += s;
      const nl = out.indexOf('\n');
      if (nl < 0 || listening) return;
      listening = true;
      const line = JSON.parse(out.slice(0, nl)) as { directory_url?: string; relay_url?: string; cache_url?: string };
      const direct: RoleUrls = {
        ...(line.directory_url === undefined ? {} : { directory: line.directory_url }),
        ...(line.relay_url === undefined ? {} : { relay: line.relay_url }),
        ...(line.cache_url === undefined ? {} : { cache: line.cache_url }),
      };
      checkedUrls(direct, proc).then(
        (urls) => resolve({ proc, pid: proc.pid!, urls, direct, exited, stderr: () => err }),
        (e: unknown) => {
          proc.kill('SIGKILL');
          reject(e instanceof Error ? e : new Error(String(e)));
        },
      );
    });
    void exited.then(() => reject(new Error(`ddn ${command} exited before listening:\n${err}`)));
  });
}

/**
 * Temp directories and `ddn serve` children of one test file, all removed (the children SIGKILLed) after it:
 * `tempDir()` makes a directory named `prefix…`; push each started child onto `children`.
 */
export function serveScratch(prefix: string): { tempDir(): string; children: ServeProcess[] } {
  const dirs: string[] = [];
  const children: ServeProcess[] = [];
  after(() => {
    for (const c of children) c.proc.kill('SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return {
    tempDir: () => {
      const d = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(d);
      return d;
    },
    children,
  };
}
