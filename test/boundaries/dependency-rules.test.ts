/**
 * The boundary check itself (`npm run lint:boundaries`, .dependency-cruiser.cjs over layers.cjs): a fixture tree
 * shaped like src/ with one planted violation per rule is cruised with the real configuration, and each planted
 * import must be reported under its rule; the allowed imports next to them must not be. The real src/ passing is
 * `npm run lint:boundaries`' job (part of `npm test` and CI).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const layers = createRequire(import.meta.url)('../../layers.cjs') as { MAY_IMPORT: Record<string, string[]> };
const FOLDERS = Object.keys(layers.MAY_IMPORT);

/** The folders `folder` reaches when every module keeps to its allow-list (as .dependency-cruiser.cjs computes it). */
function closure(folder: string): Set<string> {
  const seen = new Set([folder]);
  const todo = [folder];
  for (let f = todo.pop(); f !== undefined; f = todo.pop()) {
    for (const next of layers.MAY_IMPORT[f] ?? []) {
      if (!seen.has(next)) {
        seen.add(next);
        todo.push(next);
      }
    }
  }
  return seen;
}

/**
 * One planted import per folder of layers.cjs that may not import everything: `src/<folder>/planted-layer.ts`
 * imports a clean file of the first folder outside what the folder reaches (so outside its allow-list too).
 */
const PER_FOLDER = FOLDERS.flatMap((folder) => {
  const reach = closure(folder);
  const target = FOLDERS.find((f) => !reach.has(f));
  return target === undefined ? [] : [{ folder, target }];
});

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
  via?: unknown;
}

/** Every file of the fixture: its path under the fixture's root and its text. Imports use `.js` as in src/. */
const FILES: Record<string, string> = {
  // Targets, each clean on its own.
  'src/base/bytes.ts': 'export const b = 1;\n',
  'src/base/retry.ts': "import { setTimeout as delay } from 'node:timers/promises';\nexport const r = delay;\n",
  'src/codec/scale.ts': "import { b } from '../base/bytes.js';\nexport const s = b;\n",
  'src/crypto/hash.ts': "import { createHash } from 'node:crypto';\nexport const h = createHash;\n",
  'src/crypto/verify-thread.ts': "import { Worker } from 'node:worker_threads';\nexport const t = Worker;\n",
  'src/store/sqlite.ts': "import Database from 'better-sqlite3';\nimport pg from 'pg';\nexport const d = [Database, pg];\n",
  'src/relay/service.ts': 'export const relay = 1;\n',
  'src/directory/service.ts': 'export const directory = 1;\n',
  'src/http/server.ts': "import { b } from '../base/bytes.js';\nexport const server = b;\n",
  'src/ledger/chain.ts': "import { s } from '../codec/scale.js';\nexport class Ledger { n = s; }\n",
  // Allowed imports: none of these may be reported.
  'src/protocol/clean.ts':
    "import { createHash } from 'node:crypto';\nimport { s } from '../codec/scale.js';\nimport { h } from '../crypto/hash.js';\nexport const c = [createHash, s, h];\n",
  'src/protocol/public-endpoint.ts': "import { isIP } from 'node:net';\nexport const ip = isIP;\n",
  'src/ledger/ports.ts': "import type { Ledger } from './chain.js';\nexport type L = Ledger;\n",
  'src/directory/clean.ts': "import { h } from '../crypto/hash.js';\nimport { server } from '../http/server.js';\nexport const d = [h, server];\n",
  // Planted violations.
  'src/mirror/planted.ts': "import { d } from '../store/sqlite.js';\nexport const m = d;\n",
  'src/explorer/planted.ts': "import { directory } from '../directory/service.js';\nexport const e = directory;\n",
  'src/protocol/planted-fs.ts': "import { readFileSync } from 'node:fs';\nexport const p = readFileSync;\n",
  'src/protocol/planted-pg.ts': "import pg from 'pg';\nexport const p = pg;\n",
  'src/protocol/planted-retry.ts': "import { r } from '../base/retry.js';\nexport const p = r;\n",
  'src/protocol/planted-edge.ts': "import { t } from '../crypto/verify-thread.js';\nexport const p = t;\n",
  'src/protocol/planted-net.ts': "import { createServer } from 'node:net';\nexport const p = createServer;\n",
  'src/ledger/runtime/planted.ts': "import Database from 'better-sqlite3';\nexport const l = Database;\n",
  'src/ledger/planted-child.ts': "import { spawn } from 'node:child_process';\nexport const l = spawn;\n",
  'src/directory/planted-via-new-folder.ts': "import { v } from '../helpers/via.js';\nexport const p = v;\n",
  'src/helpers/via.ts': "import { d } from '../store/sqlite.js';\nexport const v = d;\n",
  'src/relay/planted-via-http.ts': "import { x } from '../http/planted-store.js';\nexport const p = x;\n",
  'src/http/planted-store.ts': "import { d } from '../store/sqlite.js';\nexport const x = d;\n",
  'src/cache/planted.ts': "import { relay } from '../relay/service.js';\nexport const c = relay;\n",
  'src/directory/planted-type-only.ts': "import type { d } from '../store/sqlite.js';\nexport type T = typeof d;\n",
  'src/client/planted.ts': "import { server } from '../http/server.js';\nexport const c = server;\n",
  'src/base/cycle-a.ts': "import { b } from './cycle-b.js';\nexport const a = (): number => b();\n",
  'src/base/cycle-b.ts': "import { a } from './cycle-a.js';\nexport const b = (): number => a();\n",
  'src/app/planted-dev-dep.ts': "import { build } from 'esbuild';\nexport const a = build;\n",
  'src/cli/planted-test.ts': "import { t } from '../../test/helper.js';\nexport const c = t;\n",
  'test/helper.ts': 'export const t = 1;\n',
  // A clean target in every folder, and each folder's planted import of one outside its reach (PER_FOLDER).
  ...Object.fromEntries(FOLDERS.map((f) => [`src/${f}/target.ts`, 'export const t = 1;\n'])),
  ...Object.fromEntries(
    PER_FOLDER.map(({ folder, target }) => [`src/${folder}/planted-layer.ts`, `import { t } from '../${target}/target.js';\nexport const p = t;\n`]),
  ),
};

let fixture = '';
let violations: Violation[] = [];

before(() => {
  fixture = mkdtempSync(join(tmpdir(), 'ddn-boundaries-'));
  for (const [path, text] of Object.entries(FILES)) {
    mkdirSync(dirname(join(fixture, path)), { recursive: true });
    writeFileSync(join(fixture, path), text);
  }
  for (const name of ['tsconfig.json', 'package.json']) writeFileSync(join(fixture, name), readFileSync(join(root, name)));
  symlinkSync(join(root, 'node_modules'), join(fixture, 'node_modules'), 'dir');
  const cli = join(root, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
  const run = spawnSync(process.execPath, [cli, 'src', '--config', join(root, '.dependency-cruiser.cjs'), '--output-type', 'json'], {
    cwd: fixture,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  assert.ok(run.stdout.length > 0, `dependency-cruiser ran: ${run.stderr}`);
  violations = (JSON.parse(run.stdout) as { summary: { violations: Violation[] } }).summary.violations;
});

after(() => rmSync(fixture, { recursive: true, force: true }));

/** The rules reported for the import of `to` (a path or a module name) by `from`. */
function rulesOf(from: string, to?: string): string[] {
  return violations.filter((v) => v.from === from && (to === undefined || v.to === to || v.to.includes(to))).map((v) => v.rule.name);
}

function assertCaught(from: string, to: string, rule: string): void {
  assert.ok(
    rulesOf(from, to).includes(rule),
    `${from} → ${to} is reported under ${rule}; reported: ${JSON.stringify(violations.filter((v) => v.from === from))}`,
  );
}

describe('the boundary check (dependency-cruiser over layers.cjs)', () => {
  it('reports nothing for the allowed imports', () => {
    for (const file of [
      'src/protocol/clean.ts',
      'src/protocol/public-endpoint.ts',
      'src/ledger/ports.ts',
      'src/directory/clean.ts',
      'src/store/sqlite.ts',
      'src/crypto/verify-thread.ts',
    ]) {
      assert.deepEqual(rulesOf(file), [], `${file} is clean`);
    }
  });

  it('has a layer rule and a reach rule for every folder of layers.cjs, each catching its planted import', () => {
    assert.deepEqual(
      FOLDERS.filter((f) => !PER_FOLDER.some((p) => p.folder === f)),
      ['cli'],
      'every folder but cli (which may import all of src/) has something it may not import',
    );
    for (const { folder, target } of PER_FOLDER) {
      assertCaught(`src/${folder}/planted-layer.ts`, `src/${target}/target.ts`, `layer-${folder}`);
      assertCaught(`src/${folder}/planted-layer.ts`, `src/${target}/target.ts`, `reach-${folder}`);
    }
    for (const f of FOLDERS) assert.deepEqual(rulesOf(`src/${f}/target.ts`), [], `src/${f}/target.ts is clean`);
  });

  it('catches the mirror importing a store, and the explorer importing a role', () => {
    assertCaught('src/mirror/planted.ts', 'src/store/sqlite.ts', 'layer-mirror');
    assertCaught('src/explorer/planted.ts', 'src/directory/service.ts', 'layer-explorer');
  });

  it('catches a Node I/O module in a pure layer, and node:net outside the one file allowed to parse addresses with it', () => {
    assertCaught('src/protocol/planted-fs.ts', 'fs', 'pure-no-node-io');
    assertCaught('src/protocol/planted-net.ts', 'net', 'pure-no-node-io');
    assertCaught('src/ledger/planted-child.ts', 'child_process', 'pure-no-node-io');
  });

  it('catches a database driver outside src/store, in protocol and in the ledger', () => {
    assertCaught('src/protocol/planted-pg.ts', 'node_modules/pg/', 'drivers-only-in-store');
    assertCaught('src/protocol/planted-pg.ts', 'node_modules/pg/', 'pure-packages-only');
    assertCaught('src/ledger/runtime/planted.ts', 'node_modules/better-sqlite3/', 'drivers-only-in-store');
    assertCaught('src/ledger/runtime/planted.ts', 'node_modules/better-sqlite3/', 'pure-packages-only');
  });

  it('catches a pure file importing an impure one of an allowed folder, or a platform edge', () => {
    assertCaught('src/protocol/planted-retry.ts', 'src/base/retry.ts', 'pure-imports-pure');
    assertCaught('src/protocol/planted-edge.ts', 'src/crypto/verify-thread.ts', 'pure-imports-pure');
  });

  it('catches a role reaching a store through a new folder: the folder, the import and the reach', () => {
    assert.ok(rulesOf('src/helpers/via.ts').includes('every-folder-has-a-rule'));
    assertCaught('src/directory/planted-via-new-folder.ts', 'src/helpers/via.ts', 'layer-directory');
    assertCaught('src/directory/planted-via-new-folder.ts', 'src/store/sqlite.ts', 'roles-never-reach-a-store');
    assertCaught('src/directory/planted-via-new-folder.ts', 'src/store/sqlite.ts', 'reach-directory');
  });

  it('catches a role reaching a store through an allowed folder (reachability, not only direct imports)', () => {
    assert.deepEqual(rulesOf('src/relay/planted-via-http.ts', 'src/http/planted-store.ts'), [], 'relay → http is allowed');
    assertCaught('src/relay/planted-via-http.ts', 'src/store/sqlite.ts', 'roles-never-reach-a-store');
    assertCaught('src/relay/planted-via-http.ts', 'src/store/sqlite.ts', 'reach-relay');
    assertCaught('src/http/planted-store.ts', 'src/store/sqlite.ts', 'layer-http');
  });

  it('catches a role importing another, a type-only import of a store, and the SDK importing server code', () => {
    assertCaught('src/cache/planted.ts', 'src/relay/service.ts', 'roles-are-independent');
    assertCaught('src/cache/planted.ts', 'src/relay/service.ts', 'layer-cache');
    assertCaught('src/directory/planted-type-only.ts', 'src/store/sqlite.ts', 'layer-directory');
    assertCaught('src/client/planted.ts', 'src/http/server.ts', 'layer-client');
  });

  it('catches a cycle, a devDependency and an import of the tests', () => {
    assertCaught('src/base/cycle-a.ts', 'src/base/cycle-b.ts', 'no-circular');
    assertCaught('src/app/planted-dev-dep.ts', 'node_modules/esbuild/', 'src-not-to-dev-deps');
    assertCaught('src/cli/planted-test.ts', 'test/helper.ts', 'src-not-to-test');
  });
});
