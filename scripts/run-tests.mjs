#!/usr/bin/env node
// Runs every test/**/*.test.ts file with node's own test runner (TypeScript through tsx).
// Usage: node scripts/run-tests.mjs [--coverage] [path-filter ...]
// --coverage: node's own line/branch/function coverage of the src/ files the suites load (source-mapped to the .ts)
// Every error code the tests' answers carry is recorded (test/support/answered-codes.ts) in a fresh directory; a
// whole run (no path filter) then fails for a registry code no test received (scripts/check-answered-codes.ts).
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const coverage = process.argv.includes('--coverage');
const filters = process.argv.slice(2).filter((a) => a !== '--coverage');
const files = walk('test')
  .sort()
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const measure = coverage ? ['--enable-source-maps', '--experimental-test-coverage'] : [];
const args = ['--import', 'tsx', ...measure, '--test', '--test-reporter=spec', '--test-concurrency=2', ...files];
const codes = mkdtempSync(join(tmpdir(), 'ddn-answered-codes-'));
const env = { ...process.env, NODE_ENV: 'test', DDN_TEST_CODES_DIR: codes };
const r = spawnSync(process.execPath, args, { stdio: 'inherit', env });
let status = r.status ?? 1;
if (filters.length === 0) {
  const check = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/check-answered-codes.ts', codes], { stdio: 'inherit', env });
  if (status === 0) status = check.status ?? 1;
}
rmSync(codes, { recursive: true, force: true });
process.exit(status);
