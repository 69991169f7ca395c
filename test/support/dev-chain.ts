/**
 * The local Substrate chain (`npm run dev-chain`, scripts/dev-chain.ts) as a child process in its own process
 * group, for tests on the real runtime. A cold start takes 15–35 s: start one per test file (in `before`).
 *
 * Helpers: fund or drain an account (`setBalance`), stall the whole chain (`pause`/`resume`: SIGSTOP/SIGCONT to
 * its group), stop it (`stop`: SIGTERM, resolves with the exit code) or `kill` it (SIGKILL to the group).
 * For "unreachable and back", put test/support/tcp-proxy.ts in front of `port`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setBalances } from '../../scripts/dev-chain-storage.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The dev chain's line on stdout. */
export interface DevChainListening {
  event: 'listening';
  chain_url: string;
  genesis_hash: string;
  accounts: string[];
}

export interface DevChain {
  readonly url: string;
  readonly port: number;
  readonly genesisHash: string;
  /** One key file per account, in the order of `accounts`. */
  readonly keyFiles: readonly string[];
  readonly accounts: readonly string[];
  readonly proc: ChildProcess;
  /** The raw JSON line the command printed. */
  readonly line: string;
  /** Sets `address`'s free balance (the token's smallest unit). */
  setBalance(address: string, free: bigint): Promise<void>;
  /** Stops every process of the chain (SIGSTOP): it keeps its sockets but answers nothing. */
  pause(): void;
  resume(): void;
  /** SIGTERM; resolves with the exit code (null when killed by a signal). */
  stop(): Promise<number | null>;
  /** SIGKILL to the whole process group. */
  kill(): void;
  /** What the chain wrote to stderr (the last 16 KiB). */
  stderr(): string;
}

export interface DevChainOptions {
  /** How many funded key files to write (default 1). */
  accounts?: number;
  /** Their balance (the token's smallest unit; default the command's generous one). */
  balance?: bigint;
  /** How long the start may take before the test fails (default 240 s). */
  startTimeoutMs?: number;
}

export async function startDevChain(o: DevChainOptions = {}): Promise<DevChain> {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-chain-test-'));
  const keyFiles = Array.from({ length: o.accounts ?? 1 }, (_, i) => join(dir, `account-${i}.key.json`));
  const args = ['--import', 'tsx', 'scripts/dev-chain.ts', '--port', '0', ...keyFiles.flatMap((f) => ['--key-out', f])];
  if (o.balance !== undefined) args.push('--balance', o.balance.toString());
  const proc = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const pgid = proc.pid!;
  const killGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-pgid, signal);
    } catch {
      // already gone
    }
  };
  const onExit = (): void => killGroup('SIGKILL');
  process.on('exit', onExit);
  const exited = new Promise<number | null>((resolve) =>
    proc.on('exit', (code) => {
      process.off('exit', onExit);
      resolve(code);
    }),
  );
  void exited.then(() => {
    killGroup('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  let err = '';
  proc.stderr!.setEncoding('utf8').on('data', (s: string) => (err = (err + s).slice(-16384)));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      killGroup('SIGKILL');
      reject(new Error(`the dev chain did not start in time; stderr:\n${err}`));
    }, o.startTimeoutMs ?? 240_000);
    proc.stdout!.setEncoding('utf8').on('data', (s: string) => {
      out += s;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      resolve(out.slice(0, nl));
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the dev chain exited (${code}) before listening; stderr:\n${err}`));
    });
  });
  const listening = JSON.parse(line) as DevChainListening;
  const url = listening.chain_url;
  return {
    url,
    port: Number(new URL(url).port),
    genesisHash: listening.genesis_hash,
    keyFiles,
    accounts: listening.accounts,
    proc,
    line,
    setBalance: (address, free) => setBalances(url, [address], free),
    pause: () => killGroup('SIGSTOP'),
    resume: () => killGroup('SIGCONT'),
    stop: () => {
      killGroup('SIGCONT');
      proc.kill('SIGTERM');
      return exited;
    },
    kill: () => killGroup('SIGKILL'),
    stderr: () => err,
  };
}
