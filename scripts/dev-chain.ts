/**
 * A local Substrate chain in one command, for development and tests:
 *
 *     npm run --silent dev-chain -- --port 9944 --key-out a.key.json [--key-out b.key.json …] [--balance N]
 *
 * Runs chopsticks in genesis mode (no network) from the `rococo_v2_2_asset_hub` raw chain spec shipped in
 * @substrate/connect-known-chains, on 127.0.0.1 only, building a block as soon as a transaction arrives
 * (blocks are final at once). Writes one sr25519 key file per `--key-out` (an existing file is reused), funds
 * each account (`--balance`, in the token's smallest unit; 10^18 by default), then prints one JSON line on stdout:
 *
 *     {"event":"listening","chain_url":"ws://127.0.0.1:9944","genesis_hash":"0x4545…","accounts":["5…"]}
 *
 * chopsticks' own logs go to stderr. SIGTERM or SIGINT stops chopsticks and exits 0. `--port 0` picks a free port.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { chainSpec } from '@substrate/connect-known-chains/rococo_v2_2_asset_hub';
import { createChainKeyFile, loadChainKey } from '../src/chain/chain-key.js';
import { GENEROUS_BALANCE, setBalances, withProvider } from './dev-chain-storage.js';

const USAGE = 'usage: npm run dev-chain -- [--port N] --key-out FILE [--key-out FILE …] [--balance N]';

function fail(message: string): never {
  process.stderr.write(`dev-chain: ${message}\n`);
  process.exit(1);
}

function options(): { port: number; keyOut: string[]; balance: bigint } {
  let values;
  try {
    ({ values } = parseArgs({
      options: { port: { type: 'string', default: '9944' }, 'key-out': { type: 'string', multiple: true, default: [] }, balance: { type: 'string' } },
      strict: true,
    }));
  } catch (err) {
    fail(`${(err as Error).message}\n${USAGE}`);
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port must be 0…65535\n${USAGE}`);
  if (values.balance !== undefined && !/^[0-9]+$/.test(values.balance)) fail('--balance must be a whole number (the smallest unit)');
  return { port, keyOut: values['key-out'], balance: values.balance === undefined ? GENEROUS_BALANCE : BigInt(values.balance) };
}

const opts = options();
const bin = chopsticksBin();
const dir = mkdtempSync(join(tmpdir(), 'ddn-dev-chain-'));
const specFile = join(dir, 'rococo_v2_2_asset_hub.json');
writeFileSync(specFile, chainSpec);
/** chopsticks' command (its package exports no package.json: found from its main module). */
function chopsticksBin(): string {
  let dir = dirname(createRequire(import.meta.url).resolve('@acala-network/chopsticks'));
  while (!existsSync(join(dir, 'chopsticks.cjs'))) {
    if (dirname(dir) === dir) fail('cannot find the chopsticks command in @acala-network/chopsticks');
    dir = dirname(dir);
  }
  return join(dir, 'chopsticks.cjs');
}
const child = spawn(process.execPath, [bin, '--genesis', specFile, '--host', '127.0.0.1', '--port', String(opts.port), '--build-block-mode', 'Instant'], {
  stdio: ['ignore', 'pipe', 'pipe'],
  env: { ...process.env, LOG_COMPACT: 'true' },
});
let stopping = false;

function stop(code: number): void {
  if (stopping) return;
  stopping = true;
  const done = (): void => {
    rmSync(dir, { recursive: true, force: true });
    process.exit(code);
  };
  if (child.exitCode !== null || child.signalCode !== null) return done();
  const force = setTimeout(() => child.kill('SIGKILL'), 5000);
  child.once('exit', () => {
    clearTimeout(force);
    done();
  });
  child.kill('SIGTERM');
}

process.on('SIGTERM', () => stop(0));
process.on('SIGINT', () => stop(0));
child.on('exit', (code, signal) => {
  if (stopping) return;
  process.stderr.write(`dev-chain: chopsticks exited (${signal ?? code})\n`);
  stopping = true;
  rmSync(dir, { recursive: true, force: true });
  process.exit(1);
});
child.stderr.pipe(process.stderr);

const listening = new Promise<number>((resolve) => {
  let seen: string | undefined = '';
  child.stdout.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk);
    if (seen === undefined) return;
    seen = (seen + chunk.toString('utf8')).slice(-4096);
    const m = /RPC listening on .*ws:\/\/127\.0\.0\.1:([0-9]+)/.exec(seen);
    if (m === null) return;
    seen = undefined;
    resolve(Number(m[1]));
  });
});

const port = await listening;
const url = `ws://127.0.0.1:${port}`;
try {
  const accounts: string[] = [];
  for (const file of opts.keyOut) accounts.push((existsSync(file) ? await loadChainKey(file) : await createChainKeyFile(file)).address);
  if (accounts.length > 0) await setBalances(url, accounts, opts.balance);
  const genesisHash = await withProvider(url, (p) => p.send<string>('chain_getBlockHash', [0]));
  process.stdout.write(`${JSON.stringify({ event: 'listening', chain_url: url, genesis_hash: genesisHash, accounts })}\n`);
} catch (err) {
  process.stderr.write(`dev-chain: ${(err as Error).message}\n`);
  stop(1);
}
