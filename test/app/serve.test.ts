/** `ddn serve` as a real child process (test/support/ddn-command.ts: no build needed). */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildInfo } from '../../src/app/version.js';
import { checkedUrls } from '../support/checked-proxy.js';
import { ddnArgv } from '../support/ddn-command.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Child {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function ddn(args: string[], env: NodeJS.ProcessEnv = {}): Child {
  const proc = spawn(process.execPath, [...ddnArgv(), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.setEncoding('utf8').on('data', (s: string) => (out += s));
  proc.stderr!.setEncoding('utf8').on('data', (s: string) => (err += s));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('close', (code, signal) => resolve({ code, signal })));
  return { proc, stdout: () => out, stderr: () => err, exit };
}

/** Resolves with the first stdout line, or rejects if the process exits first. */
function firstLine(child: Child): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const nl = child.stdout().indexOf('\n');
      if (nl >= 0) resolve(child.stdout().slice(0, nl));
    };
    child.proc.stdout!.on('data', check);
    void child.exit.then(({ code }) => reject(new Error(`exited ${code} before listening:\n${child.stderr()}`)));
  });
}

describe('ddn serve', () => {
  it('prints one listening line, serves /health, and exits 0 on SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ddn-serve-'));
    dirs.push(dataDir);
    const child = ddn(['serve', '--data-dir', dataDir, '--directory-port', '0', '--relay-port', '0', '--cache-port', '0'], {
      DDN_LOG_LEVEL: 'warn',
    });
    try {
      const line = JSON.parse(await firstLine(child)) as Record<string, string>;
      // the version (and the commit of this checkout) follow the URLs (issue 24)
      assert.deepEqual(Object.keys(line), [
        'event',
        'directory_url',
        'relay_url',
        'cache_url',
        'version',
        ...(buildInfo().commit === undefined ? [] : ['commit']),
      ]);
      assert.equal(line.event, 'listening');
      assert.equal(line.version, buildInfo().version);
      assert.equal(line.commit, buildInfo().commit);
      // through contract-checking proxies (test/support/checked-proxy.ts): the answers are checked too
      const checked = await checkedUrls({ directory_url: line.directory_url, relay_url: line.relay_url, cache_url: line.cache_url }, child.proc);
      for (const key of ['directory_url', 'relay_url', 'cache_url'] as const) {
        const res = await fetch(`${checked[key]!}/health`);
        assert.equal(res.status, 200);
        const body = (await res.json()) as { status: string; profile: string };
        assert.equal(body.status, 'ok');
        assert.equal(body.profile, 'platform');
      }
    } finally {
      child.proc.kill('SIGTERM');
    }
    const { code, signal } = await child.exit;
    assert.equal(signal, null, child.stderr());
    assert.equal(code, 0, child.stderr());
    const lines = child
      .stdout()
      .split('\n')
      .filter((l) => l !== '');
    assert.equal(lines.length, 1, child.stdout());
  });

  it('prints only the enabled roles', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ddn-serve-'));
    dirs.push(dataDir);
    const child = ddn(['serve', '--data-dir', dataDir, '--roles', 'cache', '--cache-port', '0', '--log-level', 'warn']);
    try {
      const line = JSON.parse(await firstLine(child)) as Record<string, string>;
      assert.deepEqual(Object.keys(line).slice(0, 2), ['event', 'cache_url']);
      assert.equal(line.version, buildInfo().version);
    } finally {
      child.proc.kill('SIGINT');
    }
    assert.equal((await child.exit).code, 0, child.stderr());
  });

  it('exits 2 with a message naming the flag on a bad option', async () => {
    const child = ddn(['serve', '--directory-port', 'nope']);
    assert.equal((await child.exit).code, 2);
    assert.match(child.stderr(), /--directory-port/);
    assert.equal(child.stdout(), '');
  });

  it('exits 1 with a one-line message when a port is taken', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ddn-serve-'));
    dirs.push(dataDir);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const child = ddn(['serve', '--data-dir', dataDir, '--roles', 'relay', '--relay-port', String(port)], {
        DDN_LOG_LEVEL: 'silent',
      });
      assert.equal((await child.exit).code, 1);
      assert.match(child.stderr(), /^ddn serve: .*EADDRINUSE.*\n$/);
      assert.equal(child.stdout(), '');
    } finally {
      server.close();
    }
  });

  it('prints its version as one JSON line with --version, and logs it first', async () => {
    const child = ddn(['--version']);
    assert.equal((await child.exit).code, 0, child.stderr());
    const out = JSON.parse(child.stdout()) as { version: string; commit?: string };
    assert.equal(out.version, (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
    assert.deepEqual(out, buildInfo());

    const dataDir = mkdtempSync(join(tmpdir(), 'ddn-serve-'));
    dirs.push(dataDir);
    const node = ddn(['serve', '--data-dir', dataDir, '--roles', 'directory', '--directory-port', '0', '--log-format', 'json']);
    try {
      await firstLine(node);
    } finally {
      node.proc.kill('SIGTERM');
    }
    assert.equal((await node.exit).code, 0, node.stderr());
    const first = JSON.parse(node.stderr().split('\n')[0]!) as Record<string, unknown>;
    assert.equal(first.msg, 'ddn starting');
    assert.equal(first.version, buildInfo().version);
    assert.equal(node.stderr().includes('request completed'), false);
  });

  it('exits 2 with usage on an unknown or missing command, 0 with the help on stdout on --help', async () => {
    const unknown = ddn(['frobnicate']);
    assert.equal((await unknown.exit).code, 2);
    assert.match(unknown.stderr(), /unknown command 'frobnicate'/);
    assert.match(unknown.stderr(), /usage: ddn/);
    const none = ddn([]);
    assert.equal((await none.exit).code, 2);
    assert.match(none.stderr(), /usage: ddn/);
    const help = ddn(['serve', '--help']);
    assert.equal((await help.exit).code, 0);
    assert.match(help.stdout(), /--data-dir/);
    assert.equal(help.stderr(), '');
  });
});
