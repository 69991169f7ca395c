/**
 * Every shell block of README.md and docs/ runs as written (issue 25 item 9, issue 42 item 5), so the docs stay
 * true. Each block runs in `sh` with `set -e`, in a fresh temporary directory that is also $HOME (so the identity
 * book and the keys land there), with `npx ddn` running this checkout built as `npm ci` builds it
 * (test/support/ddn-package.ts) and `npm ci` left out. The only changes to the text: the docs' fixed ports become
 * free ones (blocks run side by side), `DB=` names the test database (DDN_TEST_PG_URL, in a schema of its own), and
 * a server the block starts in the foreground (`npx ddn serve …` without `&`) is started in the background and
 * waited for, so the block can end. A block that talks to "a running node" gets one started first (PRELUDES), and
 * a few get the files and identities they name. Whatever a block leaves running is stopped with SIGTERM afterwards
 * and must leave no process and no port behind, and every file it leaves in the directory must be one the
 * repository's .gitignore covers (a newcomer runs them in the clone). A block not run says why in NOT_RUN; a new
 * block that is neither run nor listed fails the first test.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDdnPackage } from '../support/ddn-package.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { groupMembers, isRunning, portIsFree, signalIfRunning } from '../support/processes.js';
import { unusedPort } from '../support/ports.js';
import { waitFor } from '../support/wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOC_PORTS = ['8080', '8081', '8082', '8090', '8091', '9001', '9002', '9080', '9081', '9082'];

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

/** One shell block of a doc: `file`, the heading above it, its ordinal under that heading (1…) and its text. */
interface DocBlock {
  id: string;
  text: string;
}

/** Every ```sh / ```bash block of README.md and docs/*.md, named `file § heading #n`. */
function allBlocks(): DocBlock[] {
  const files = [
    'README.md',
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const out: DocBlock[] = [];
  for (const file of files) {
    let heading = '';
    const seen = new Map<string, number>();
    let block: string[] | undefined;
    for (const line of readFileSync(join(ROOT, file), 'utf8').split('\n')) {
      if (block !== undefined) {
        if (/^```\s*$/.test(line)) {
          const n = (seen.get(heading) ?? 0) + 1;
          seen.set(heading, n);
          out.push({ id: `${file} § ${heading} #${n}`, text: `${block.join('\n')}\n` });
          block = undefined;
        } else block.push(line);
      } else if (/^```(sh|bash)\s*$/.test(line)) block = [];
      else if (/^#{1,6} /.test(line)) heading = line.replace(/^#+ /, '');
    }
  }
  return out;
}

/** A node on the docs' ports (moved like the block's), for the blocks that talk to "a running node". */
const NODE = 'npx ddn serve --allow-private-endpoints --data-dir ./.ddn-data >/dev/null 2>&1 &\nnpx ddn health --wait 30 >/dev/null\n';

const did = `did_of() { node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).did'; }\n`;

/** What runs before a block (the node, files and identities the text assumes), and what its output must show. */
const PRELUDES: Readonly<Record<string, { prelude: string; expect?: RegExp }>> = {
  'README.md § Quick start: two DIDs and an encrypted file #1': { prelude: '', expect: /^received$/m },
  'docs/api.md § The API #1': { prelude: NODE, expect: /"openapi"/ },
  'docs/cli.md § The identity book #1': { prelude: NODE, expect: /"received":0/ },
  'docs/deployment.md § Running the roles in separate processes #1': { prelude: '', expect: /^received$/m },
  'docs/explorer.md § History routes #1': { prelude: '', expect: /"action":"register_did"[\s\S]*"next_cursor":null/ },
  'docs/mirrors.md § `GET /export?after=<seq>&count=<n>` #1': { prelude: NODE, expect: /ddn-feed-head/i },
  'docs/operations.md § Operating a node #1': { prelude: '' },
  'docs/operations.md § Version #1': { prelude: '', expect: /"version":/ },
  'docs/operations.md § Metrics: `GET /metrics` #1': { prelude: NODE, expect: /^ddn_ledger/m },
  'docs/operations.md § Metrics: `GET /metrics` #2': { prelude: '', expect: /^# HELP/m },
  'docs/operations.md § Health and readiness #1': { prelude: NODE, expect: /"genesis_hash"/ },
  'docs/operations.md § Health and readiness #2': { prelude: NODE, expect: /^200$/m },
  'docs/operations.md § Health and readiness #3': { prelude: NODE, expect: /^200$/m },
  'docs/operations.md § One process per data directory #1': { prelude: '', expect: /^refused \(exit 1\)$/m },
  'docs/api.md § W3C DID Resolution: `GET /1.0/identifiers/{did}` #1': { prelude: NODE, expect: /METHOD_NOT_SUPPORTED/ },
  'docs/explorer.md § Explorer read routes #1': { prelude: NODE, expect: /"hits":\[/ },
  'docs/operations.md § Request ids #1': { prelude: NODE, expect: /x-request-id: support-ticket-4711/i },
  'docs/policies.md § A first policy #1': { prelude: NODE, expect: /refused \(exit 1\)/ },
  'docs/public-node.md § The proof #1': { prelude: NODE, expect: /did_not_found/ },
  'docs/public-node.md § Event rules and amplification #1': { prelude: NODE, expect: /refused \(exit 1\)/ },
  'docs/public-node.md § Event rules and amplification #2': { prelude: NODE, expect: /"events":\{"dropped"/ },
  'docs/public-node.md § Deleted DIDs #1': { prelude: NODE, expect: /refused \(exit 1\)/ },
  'docs/public-node.md § Connections and request bodies #1': { prelude: '' },
  'docs/public-node.md § Connections and request bodies #2': {
    prelude: NODE,
    expect: /expectation_failed[\s\S]*too_deep[\s\S]*"code":"headers_too_large"[\s\S]*"limit":16384/,
  },
  'docs/sending-files.md § Addressing: a DID, an alias, or `…@persona` #1': {
    prelude:
      NODE +
      'npx ddn key generate --out bob.pem >/dev/null && npx ddn key generate --type x25519 --out bob-x25519.pem >/dev/null\n' +
      'npx ddn did create --key bob.pem --key-agreement bob-x25519.pem --alias bob --cache http://127.0.0.1:8082 >/dev/null\n' +
      'head -c 100000 /dev/urandom > report.pdf && mkdir inbox\n',
    expect: /"name":"report.pdf"/,
  },
  'docs/sending-files.md § Signed senders #1': {
    prelude:
      NODE +
      did +
      'npx ddn did create --alias bob --cache http://127.0.0.1:8082 >/dev/null\n' +
      'npx ddn key generate --out alice.pem >/dev/null\nALICE=$(npx ddn did create --key alice.pem --alias alice | did_of)\n' +
      'head -c 1000 /dev/urandom > report.pdf\n',
    expect: /"sender":"did:/,
  },
};

/** Blocks not run here, and why. */
const NOT_RUN: Readonly<Record<string, string>> = {
  'README.md § The two commands #1': 'a foreground server and the whole test suite; the quick start runs the server',
  'README.md § From a fresh clone to a registered DID (SDK) #1': 'runs examples/ of the checkout with tsx; the package test covers the SDK',
  'docs/deployment.md § Scaling out on PostgreSQL #1': 'run by its own test below when DDN_TEST_PG_URL is set',
  'docs/explorer.md § Tests #1': 'installs Chromium with apt-get; test/explorer is that test',
  'docs/mirrors.md § `GET /export/stream?cursor=<seq>` (WebSocket) #1': 'follows the stream until stopped with Ctrl-C',
  'docs/mirrors.md § `ddn mirror` #1': 'a mirror of a primary; test/cli/mirror.test.ts runs the same command',
  'docs/mirrors.md § Relays and Caches on a mirror #1': 'needs a mirror and its primary; test/network covers a Relay on a mirror',
  'docs/public-node.md § Who may open a session: `--relay-live-auth` #1': 'three alternative ways to start the same node, not a sequence',
  'docs/public-node.md § Request rate limits #1': 'starts two nodes on the same ports, the first in the foreground (an alternative, not a sequence)',
  'docs/public-node.md § Settings #1': 'a Cache-only node with a 20 GiB storage budget, checked against the free disk',
  'README.md § The two commands #2': 'the whole test suite (this test is part of it)',
  'README.md § Using ddn as a package #1': 'npm pack and an install from the registry; test/package/installed-package.test.ts does the same offline',
  'README.md § Using ddn as a package #2':
    'needs the project of the block above; test/package/installed-package.test.ts compiles and runs the same under strict',
  'docs/api.md § Sending and receiving a file with the SDK #1':
    'runs examples/ with tsx; test/package/installed-package.test.ts runs examples/send-file.ts against a node',
  'docs/chain.md § Quick start: a dev chain and two Directories #1':
    'starts a Substrate dev chain (15–35 s); test/chain/substrate-network.test.ts runs the same commands on it',
  'docs/chain.md § Quick start: a dev chain and two Directories #2':
    'needs the dev chain of the block above; test/chain/substrate-network.test.ts starts a Directory so',
  'docs/chain.md § The local dev chain #1': 'a foreground dev chain; test/chain/dev-chain.test.ts runs the command',
  'docs/chain.md § The local dev chain #2': 'needs a running dev chain and a key file from it; test/chain/substrate-client.test.ts reads the same fees',
};

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
    ports.set(p, String(await unusedPort()));
  }
  let script = block
    .split('\n')
    .filter((l) => !/^npm ci\b/.test(l))
    // a server started in the foreground (not one the block expects to be refused, `|| echo …`): in the background,
    // and waited for, so that the block ends
    .map((l) =>
      /^npx ddn serve\b/.test(l) && !/(&|\\)\s*(#.*)?$/.test(l) && !l.includes('||') ? `${l.replace(/\s*#.*$/, '')} &\nnpx ddn health --wait 30` : l,
    )
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
  const untracked = leftovers(home).filter((f) => !ignoredByGit(f));
  assert.deepEqual(untracked, [], `files the block leaves that .gitignore does not cover:\n${script}`);
  return out;
}

/** What a block left in its directory, outside $HOME's own (the identity book, keys, state) and the test's shims. */
function leftovers(home: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      const rel = relative(home, p);
      if (['.test-bin', '.config', '.local', '.npm'].includes(rel)) continue;
      if (statSync(p).isDirectory()) out.push(`${rel}/`);
      else out.push(rel);
    }
  };
  walk(home);
  return out;
}

/** True when the repository's .gitignore covers `path` (relative to the repository root). */
function ignoredByGit(path: string): boolean {
  return spawnSync('git', ['check-ignore', '--no-index', '-q', path], { cwd: ROOT }).status === 0;
}

describe('the docs run as written', { concurrency: 2 }, () => {
  it('every shell block of README.md and docs/ is run here, or says why not', () => {
    const ids = allBlocks().map((b) => b.id);
    const unplanned = ids.filter((id) => PRELUDES[id] === undefined && NOT_RUN[id] === undefined);
    assert.deepEqual(unplanned, [], 'blocks neither run nor listed in NOT_RUN (add them to PRELUDES, with what they need)');
    const stale = [...Object.keys(PRELUDES), ...Object.keys(NOT_RUN)].filter((id) => !ids.includes(id));
    assert.deepEqual(stale, [], 'planned blocks that no doc has any more');
  });

  for (const block of allBlocks()) {
    const plan = PRELUDES[block.id];
    if (plan === undefined) continue;
    it(block.id, async () => {
      const out = await runBlock(`${plan.prelude}${block.text}`);
      if (plan.expect !== undefined) assert.match(out, plan.expect);
    });
  }

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
