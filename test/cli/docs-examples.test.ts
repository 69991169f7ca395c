/**
 * Issue 25, item 9: the shell blocks of the README's quick start and of docs/deployment.md's "separate processes"
 * and "scaling out on PostgreSQL" sections run as written, so they stay true. Each block runs in `sh` with
 * `set -e`, in a fresh temporary directory that is also $HOME (so the identity book and the keys land there), with
 * `npx ddn` running this checkout built as `npm ci` builds it (test/support/ddn-package.ts) and `npm ci` left out. The only changes to the text: the docs' fixed
 * ports become free ones (other suites run beside this one) and `DB=` names the test database (DDN_TEST_PG_URL,
 * in a schema of its own). Whatever a block leaves running in the background is stopped with SIGTERM afterwards
 * and must leave no process and no port behind.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDdnPackage } from '../support/ddn-package.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { groupMembers, isRunning, portIsFree, signalIfRunning } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOC_PORTS = ['8080', '8081', '8082', '8090', '8091', '9001', '9002'];

const dirs: string[] = [];
let bin: string;
before(async () => {
  const pkg = await buildDdnPackage();
  dirs.push(pkg);
  bin = join(pkg, 'bin', 'ddn.js');
});
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The first ```sh block after the heading `heading` of `file`. */
function shellBlock(file: string, heading: string): string {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const at = text.indexOf(`\n${heading}\n`);
  assert.ok(at >= 0, `${file} has the heading ${heading}`);
  const m = /```sh\n([\s\S]*?)```/.exec(text.slice(at));
  assert.ok(m, `${file}: a sh block under ${heading}`);
  return m[1]!;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Runs `block` as written (ports and DB aside); resolves with its stdout once it and everything it started ended. */
async function runBlock(block: string, extraEnv: NodeJS.ProcessEnv = {}, db?: string): Promise<string> {
  const home = mkdtempSync(join(tmpdir(), 'ddn-docs-'));
  dirs.push(home);
  const shims = join(home, '.test-bin');
  mkdirSync(shims);
  // `npx ddn …` → this checkout's ddn; any other npx use would be a mistake in the docs
  writeFileSync(
    join(shims, 'npx'),
    `#!/bin/sh\nif [ "$1" = ddn ]; then shift; exec "${process.execPath}" "${bin}" "$@"; fi\necho "unexpected: npx $*" >&2\nexit 127\n`,
  );
  chmodSync(join(shims, 'npx'), 0o755);
  const ports = new Map<string, string>();
  for (const p of DOC_PORTS) {
    let port = String(await freePort());
    while ([...ports.values()].includes(port)) port = String(await freePort());
    ports.set(p, port);
  }
  let script = block
    .split('\n')
    .filter((l) => !/^npm ci\b/.test(l))
    .join('\n')
    .replace(new RegExp(`\\b(${DOC_PORTS.join('|')})\\b`, 'g'), (p) => ports.get(p)!);
  if (db !== undefined) script = script.replace(/^DB=.*$/m, `DB=${db}`);
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('DDN_') && !k.startsWith('npm_') && k !== 'XDG_CONFIG_HOME') env[k] = v;
  Object.assign(env, {
    HOME: home,
    PATH: `${shims}:${process.env.PATH ?? ''}`,
    // the defaults the quick start relies on (ports 8080-8082), moved with the ports
    DDN_DIRECTORY_PORT: ports.get('8080'),
    DDN_RELAY_PORT: ports.get('8081'),
    DDN_CACHE_PORT: ports.get('8082'),
    DDN_DIRECTORY_URL: `http://127.0.0.1:${ports.get('8080')}`,
    DDN_RELAY_URL: `http://127.0.0.1:${ports.get('8081')}`,
    DDN_LOG_LEVEL: 'warn',
    DDN_BLOCK_TIME_MS: '100',
    ...extraEnv,
  });
  const sh = spawn('sh', ['-c', `set -e\n${script}`], { cwd: home, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  sh.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  sh.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
  // 'exit', not 'close': the servers the block left in the background hold its stdout and stderr open
  const code = await new Promise<number | null>((resolve) => sh.on('exit', (c) => resolve(c)));
  // the servers the block put in the background are still in its process group
  const left = groupMembers(sh.pid!);
  for (const pid of left) signalIfRunning(pid, 'SIGTERM');
  try {
    for (const pid of left) await waitFor(`process ${pid} of the block to stop`, async () => (isRunning(pid) ? undefined : true), { tries: 600, everyMs: 50 });
  } finally {
    for (const pid of groupMembers(sh.pid!)) signalIfRunning(pid, 'SIGKILL');
  }
  assert.equal(code, 0, `the block failed (exit ${code}):\n${script}\n--- stdout\n${out}\n--- stderr\n${err}`);
  for (const p of ports.values()) assert.equal(await portIsFree(Number(p)), true, `port ${p} is free once the block's processes stopped`);
  return out;
}

describe('the docs run as written', () => {
  it("README.md's quick start: two DIDs, an encrypted file sent and received byte-identical", async () => {
    const out = await runBlock(shellBlock('README.md', '## Quick start: two DIDs and an encrypted file'));
    assert.match(out, /"registration_status":"confirmed"/);
    assert.match(out, /^received$/m);
  });

  it('docs/deployment.md, separate processes: a Directory, a Cache and a Relay process carry a file', async () => {
    const out = await runBlock(shellBlock('docs/deployment.md', '## Running the roles in separate processes'));
    assert.match(out, /^received$/m);
  });

  if (PG_URL) {
    it('docs/deployment.md, scaling out on PostgreSQL: two processes of each role carry a file', async () => {
      const pg = await freshPgSchema();
      try {
        const out = await runBlock(shellBlock('docs/deployment.md', '### Scaling out on PostgreSQL'), { DDN_DB_SCHEMA: pg.schema }, pg.url);
        assert.match(out, /^received$/m);
      } finally {
        await pg.drop();
      }
    });
  }
});
