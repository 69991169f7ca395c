#!/usr/bin/env node
// Runs every test/**/*.test.ts file with node's own test runner (TypeScript through tsx).
// Usage: node scripts/run-tests.mjs [--coverage] [path-filter ...]
// --coverage: node's own line/branch/function coverage of the src/ files the suites load (source-mapped to the .ts)
// Every error code the tests' answers carry is recorded (test/support/answered-codes.ts) in a fresh directory; a
// whole run (no path filter) then fails for a registry code no test received (scripts/check-answered-codes.ts).
// The `ddn` children the suites start run from a JavaScript copy of src/ compiled here once per run (see
// compileSources), not through tsx; a --coverage run keeps tsx so that the children's lines map to src/.
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { build } from 'esbuild';

function walk(dir, suffix) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p, suffix));
    else if (name.endsWith(suffix)) out.push(p);
  }
  return out;
}

const coverage = process.argv.includes('--coverage');
const filters = process.argv.slice(2).filter((a) => a !== '--coverage');
const files = walk('test', '.test.ts')
  .sort()
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const measure = coverage ? ['--enable-source-maps', '--experimental-test-coverage'] : [];
const args = ['--import', 'tsx', ...measure, '--test', '--test-reporter=spec', '--test-concurrency=2', ...files];

/**
 * src/ compiled to JavaScript (esbuild, file by file) in a fresh directory `.test-src-…` of the repository root, laid
 * out as `npm run build` lays out dist/ (so that src/app/version.ts finds package.json and the commit, the explorer
 * its bundle, a worker its module beside it): test/support/ddn-command.ts starts the suites' `ddn` children from it,
 * each in about half the CPU of a start through tsx. Returns the directory.
 */
async function compileSources() {
  const out = mkdtempSync(join(process.cwd(), '.test-src-'));
  await build({ entryPoints: walk('src', '.ts'), outdir: out, outbase: 'src', format: 'esm', platform: 'node', target: 'node20', logLevel: 'error' });
  return out;
}

const codes = mkdtempSync(join(tmpdir(), 'ddn-answered-codes-'));
const env = { ...process.env, NODE_ENV: 'test', DDN_TEST_CODES_DIR: codes };
const compiled = coverage ? undefined : await compileSources();
if (compiled !== undefined) env.DDN_TEST_DDN_ENTRY = join(compiled, 'cli', 'entry-dev.js');
const r = spawnSync(process.execPath, args, { stdio: 'inherit', env });
let status = r.status ?? 1;
if (filters.length === 0) {
  const check = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/check-answered-codes.ts', codes], { stdio: 'inherit', env });
  if (status === 0) status = check.status ?? 1;
}
rmSync(codes, { recursive: true, force: true });
if (compiled !== undefined) rmSync(compiled, { recursive: true, force: true });
process.exit(status);
