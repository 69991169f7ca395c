/**
 * Issue 42, item 7: the package as a newcomer installs it. `npm pack` makes the tarball from this checkout's build
 * (`npm run build` first: like the CLI suites, this one packs dist/); it is installed into an empty project
 * together with TypeScript and Node's types, preferring npm's cache: the dependencies this checkout already
 * installed are copied in first, so npm finds them satisfied (the native addon better-sqlite3 comes built, as
 * `npm ci` built it here); what the cache lacks (a tool's registry entry on a fresh machine) comes from the registry. Then, in that project, `npx ddn serve` runs a node, and the examples shipped in the
 * package — which import `ddn/client` — compile under `strict` and run against it: a DID registered, a file sent
 * and received byte for byte.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkedUrls, pendingProxy } from '../support/checked-proxy.js';
import { signalIfRunning } from '../support/processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** What the empty project adds beside ddn, at the versions this checkout has (so they are in its node_modules). */
const TOOLS = ['typescript', '@types/node'];

interface LockEntry {
  version?: string;
  dev?: boolean;
  devOptional?: boolean;
  dependencies?: Record<string, string>;
}

function run(command: string, args: string[], cwd: string): string {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' } });
  assert.equal(r.status, 0, `${command} ${args.join(' ')} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/**
 * {@link run} without blocking this process: the node's URLs are contract-checking proxies in this process
 * (test/support/checked-proxy.ts), which must go on serving while the example runs.
 */
async function runAsync(command: string, args: string[], cwd: string): Promise<string> {
  const proc = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  proc.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
  const status = await new Promise<number | null>((resolve) => proc.on('close', resolve));
  assert.equal(status, 0, `${command} ${args.join(' ')} failed (${status}):\n${out}\n${err}`);
  return out;
}

/** The checkout's top-level packages a user of ddn needs: ddn's dependencies (from the lockfile) and the tools'. */
function neededPackages(): { paths: string[]; versions: Record<string, string> } {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const entry = (name: string) => lock.packages[`node_modules/${name}`];
  const paths = Object.entries(lock.packages)
    .filter(([p, e]) => p !== '' && p.lastIndexOf('node_modules/') === 0 && e.dev !== true && e.devOptional !== true)
    .map(([p]) => p);
  const versions: Record<string, string> = {};
  for (const tool of TOOLS) {
    versions[tool] = entry(tool)!.version!;
    paths.push(`node_modules/${tool}`, ...Object.keys(entry(tool)!.dependencies ?? {}).map((d) => `node_modules/${d}`));
  }
  return { paths, versions };
}

describe('the packed package, installed into an empty project', () => {
  let work: string;
  let app: string;
  let serve: ChildProcess | undefined;
  let urls: { directory_url: string; relay_url: string; cache_url: string };
  let packed: string[];

  before(async () => {
    for (const built of ['dist/cli/main.js', 'dist/client/index.d.ts', 'dist/explorer-bundle/app.js']) {
      assert.ok(existsSync(join(ROOT, built)), `${built} is missing: run npm run build`);
    }
    work = mkdtempSync(join(tmpdir(), 'ddn-pack-'));
    const [pack] = JSON.parse(run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], ROOT)) as {
      filename: string;
      files: { path: string }[];
    }[];
    packed = pack!.files.map((f) => f.path);
    const tarball = join(work, pack!.filename);

    app = join(work, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), `${JSON.stringify({ name: 'newcomer', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`);
    const { paths, versions } = neededPackages();
    for (const p of paths) cpSync(join(ROOT, p), join(app, p), { recursive: true, verbatimSymlinks: true });
    rmSync(join(app, 'node_modules', '.bin'), { recursive: true, force: true });
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball, ...TOOLS.map((t) => `${t}@${versions[t]}`)], app);

    // contract-checking proxies, opened first: the Relay's and the Cache's are the node's public URLs, so the
    // examples' DID documents and the node signatures name them (test/support/checked-proxy.ts)
    const pending = { relay_url: await pendingProxy(), cache_url: await pendingProxy() };
    const publicUrls = ['--public-relay-url', pending.relay_url.url, '--public-cache-url', pending.cache_url.url];
    serve = spawn(
      'npx',
      ['ddn', 'serve', '--data-dir', 'data', '--directory-port', '0', '--relay-port', '0', '--cache-port', '0', '--allow-private-endpoints', ...publicUrls],
      {
        cwd: app,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, DDN_LOG_LEVEL: 'warn' },
      },
    );
    let out = '';
    let err = '';
    serve.stderr!.setEncoding('utf8').on('data', (s: string) => (err += s));
    const line = await new Promise<typeof urls>((resolve, reject) => {
      serve!.stdout!.setEncoding('utf8').on('data', (s: string) => {
        out += s;
        const line = out.split('\n').find((l) => l.startsWith('{"event":"listening"'));
        if (line !== undefined && out.includes(`${line}\n`)) resolve(JSON.parse(line) as typeof urls);
      });
      serve!.on('close', (code) => {
        for (const p of Object.values(pending)) p.close();
        reject(new Error(`npx ddn serve exited ${code} before listening:\n${out}\n${err}`));
      });
    });
    // every answer the test and the examples read goes through a contract-checking proxy (closed when npx exits)
    const checked = await checkedUrls({ directory_url: line.directory_url, relay_url: line.relay_url, cache_url: line.cache_url }, serve, pending);
    urls = { directory_url: checked.directory_url!, relay_url: checked.relay_url!, cache_url: checked.cache_url! };
  });

  after(() => {
    if (serve?.pid !== undefined) signalIfRunning(-serve.pid, 'SIGKILL');
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it('is open source and ships the build, the command, the docs and the examples, no sources or tests', () => {
    for (const f of [
      'LICENSE',
      'README.md',
      'package.json',
      'bin/ddn.js',
      'dist/client/index.js',
      'dist/client/index.d.ts',
      'dist/explorer-bundle/app.js',
      'docs/api.md',
      'examples/send-file.ts',
    ]) {
      assert.ok(packed.includes(f), `the tarball holds ${f}`);
    }
    assert.deepEqual(
      packed.filter((f) => /^(src|test|bench|scripts)\//.test(f)),
      [],
    );
    const installed = JSON.parse(readFileSync(join(app, 'node_modules', 'ddn', 'package.json'), 'utf8')) as { license: string; private?: boolean };
    assert.equal(installed.license, 'Apache-2.0');
    assert.equal(installed.private, undefined);
    assert.match(readFileSync(join(app, 'node_modules', 'ddn', 'LICENSE'), 'utf8'), /Apache License\s+Version 2\.0/);
  });

  it("`npx ddn` runs the installed command: the node it serves answers, with the package's version", async () => {
    const health = (await (await fetch(`${urls.directory_url}/health`)).json()) as { status: string; version: string };
    assert.equal(health.status, 'ok');
    assert.equal(health.version, (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
    assert.deepEqual(JSON.parse(run('npx', ['ddn', '--version'], app)), { version: health.version });
  });

  it("the package's examples compile under strict TypeScript against `ddn/client` and run: a DID registered, a file sent and received", async () => {
    const src = join(app, 'src');
    mkdirSync(src);
    for (const f of ['register-did.ts', 'send-file.ts']) copyFileSync(join(app, 'node_modules', 'ddn', 'examples', f), join(src, f));
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          outDir: 'build',
          rootDir: 'src',
          types: ['node'],
          skipLibCheck: true,
        },
        include: ['src'],
      }),
    );
    run(join(app, 'node_modules', '.bin', 'tsc'), ['-p', '.'], app);

    const registered = JSON.parse(await runAsync(process.execPath, ['build/register-did.js', urls.directory_url, 'newcomer'], app)) as {
      did: string;
      record: { aliases: string[] };
    };
    assert.match(registered.did, /^did:/);
    assert.deepEqual(registered.record.aliases, ['newcomer']);

    const file = join(app, 'report.bin');
    const bytes = Buffer.alloc(300_000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919) % 251;
    writeFileSync(file, bytes);
    const received = JSON.parse(
      await runAsync(process.execPath, ['build/send-file.js', file, 'inbox', urls.directory_url, urls.relay_url, urls.cache_url], app),
    ) as {
      from: string;
      files: { path: string; sender: string }[];
    };
    assert.equal(received.files.length, 1);
    assert.equal(received.files[0]!.sender, received.from, "the sender's signature verified");
    assert.deepEqual(readFileSync(join(app, 'inbox', 'report.bin')), bytes);
  });
});
