#!/usr/bin/env node
// Runs every test/**/*.test.ts file with node's own test runner.
// Usage: node scripts/run-tests.mjs [--coverage] [--tsx] [path-filter ...]
// The test files and src/ are compiled to JavaScript here once per run (esbuild; see compileSources and
// compileTests) and node --test runs the compiled files, with inline source maps so that a failure's stack names the
// .ts lines. --tsx: the test files load the sources through tsx instead, as before (a comparison, or a run without
// the compile step); the `ddn` children still start from the compiled src/.
// --coverage: node's own line/branch/function coverage of the src/ files the suites load (source-mapped to the .ts);
// a coverage run loads everything through tsx, the children too, so that their lines map to src/.
// DDN_TEST_CONCURRENCY: how many test files run at once (default 2, the CI machine's cores).
// DDN_TEST_TIMES=FILE: also write each file's wall time to FILE (JSON lines; scripts/test-times-reporter.mjs).
// Every error code the tests' answers carry is recorded (test/support/answered-codes.ts) in a fresh directory; a
// whole run (no path filter) then fails for a registry code no test received (scripts/check-answered-codes.ts).
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawnSync } from 'node:child_process';
import { build } from 'esbuild';
import { removeStaleRunDirs, runDir } from './run-dirs.mjs';

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
const viaTsx = coverage || process.argv.includes('--tsx');
const filters = process.argv.slice(2).filter((a) => a !== '--coverage' && a !== '--tsx');
const files = walk('test', '.test.ts')
  .sort()
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const concurrency = process.env.DDN_TEST_CONCURRENCY || '2';
const ROOT = process.cwd();
const SRC = join(ROOT, 'src');
const TEST = join(ROOT, 'test');
/** The generated OpenAPI types: type-only files that test/app/openapi-types.test.ts reads as text where they are. */
const TYPES = join(TEST, 'support', 'openapi-types');
const inside = (path, dir) => path.startsWith(dir + sep);
/** The directories this run made, removed when it exits (a failed compile too). */
const made = [];
/** How every compile of a run emits: ESM for Node 20, inline source maps (a failure's stack names the .ts line). */
const ESBUILD = { format: 'esm', platform: 'node', target: 'node20', sourcemap: 'inline', sourcesContent: false, logLevel: 'error' };
process.on('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});
// what killed runs left (scripts/run-dirs.mjs)
const CODES_PREFIX = 'ddn-answered-codes-';
for (const [parent, prefix] of [
  [ROOT, '.test-src-'],
  [ROOT, '.test-js-'],
  [tmpdir(), CODES_PREFIX],
]) {
  removeStaleRunDirs(parent, prefix);
}

/**
 * src/ compiled to JavaScript (esbuild, file by file) in a fresh directory `.test-src-…` of the repository root, laid
 * out as `npm run build` lays out dist/ (so that src/app/version.ts finds package.json and the commit, the explorer
 * its bundle, a worker its module beside it): the compiled test files import it, and test/support/ddn-command.ts
 * starts the suites' `ddn` children from it, each in about half the CPU of a start through tsx. Returns the
 * directory.
 */
async function compileSources() {
  const out = runDir(ROOT, '.test-src-');
  made.push(out);
  await build({
    entryPoints: walk('src', '.ts'),
    outdir: out,
    outbase: 'src',
    ...ESBUILD,
  });
  return out;
}

/**
 * test/, bench/ and scripts/ compiled to JavaScript for the test processes, each in a fresh directory of the
 * repository root (`.test-js-…`, `.test-js-…-bench`, `.test-js-…-scripts`) at the depth of its source: test/cli/x.ts
 * → .test-js-…/cli/x.js, so that a test's `new URL('../..', import.meta.url)` is still the repository root and
 * `../vectors/…` finds the vectors (each tree's other files are linked in, the generated OpenAPI types' folder as a
 * whole, which test/app/openapi-types.test.ts reads as text). One module per file, as tsx loads them; each relative
 * import is rewritten (an esbuild plugin) to the compiled copy of its .ts — src/'s in `srcOut` — or, for any other
 * file (scripts/*.mjs, JSON), to the file itself; packages stay as they are. Returns the test/ directory.
 */
async function compileTests(srcOut) {
  const testOut = runDir(ROOT, '.test-js-');
  made.push(testOut);
  const trees = new Map([
    [SRC, srcOut],
    [TEST, testOut],
    [join(ROOT, 'bench'), `${testOut}-bench`],
    [join(ROOT, 'scripts'), `${testOut}-scripts`],
  ]);
  const compiledOf = (abs) => {
    for (const [dir, out] of trees) if (inside(abs, dir)) return join(out, relative(dir, abs));
    return undefined;
  };
  const external = (path) => ({ path: pathToFileURL(path).href, external: true });
  const relocate = {
    name: 'relocate',
    setup(b) {
      b.onResolve({ filter: /^\.\.?\// }, (args) => {
        if (args.kind === 'entry-point') return undefined;
        const abs = resolve(args.resolveDir, args.path);
        const ts = abs.replace(/\.js$/, '.ts');
        if (ts === abs || !existsSync(ts)) return external(abs);
        const compiled = compiledOf(abs);
        return compiled === undefined ? { path: ts } : external(compiled);
      });
    },
  };
  for (const [dir, out] of trees) {
    if (dir === SRC) continue;
    if (out !== testOut) made.push(out);
    mkdirSync(out, { recursive: true });
    const entryPoints = [];
    for (const f of walk(dir, '')) {
      const abs = resolve(f);
      if (inside(abs, TYPES) || inside(abs, join(ROOT, 'bench', 'results'))) continue;
      if (f.endsWith('.ts')) entryPoints.push(f);
      else {
        mkdirSync(dirname(join(out, relative(dir, abs))), { recursive: true });
        symlinkSync(abs, join(out, relative(dir, abs)));
      }
    }
    await build({
      entryPoints,
      outdir: out,
      outbase: dir,
      bundle: true,
      packages: 'external',
      plugins: [relocate],
      ...ESBUILD,
    });
  }
  mkdirSync(join(testOut, 'support'), { recursive: true });
  symlinkSync(TYPES, join(testOut, 'support', 'openapi-types'), 'dir');
  return testOut;
}

const codes = runDir(tmpdir(), CODES_PREFIX);
made.push(codes);
const env = { ...process.env, NODE_ENV: 'test', DDN_TEST_CODES_DIR: codes };
const compiled = coverage ? undefined : await compileSources();
const tests = viaTsx ? undefined : await compileTests(compiled);
if (compiled !== undefined) env.DDN_TEST_DDN_ENTRY = join(compiled, 'cli', 'entry-dev.js');
const load = viaTsx ? ['--import', 'tsx'] : ['--enable-source-maps'];
const measure = coverage ? ['--enable-source-maps', '--experimental-test-coverage'] : [];
const times = process.env.DDN_TEST_TIMES
  ? ['--test-reporter=./scripts/test-times-reporter.mjs', `--test-reporter-destination=${process.env.DDN_TEST_TIMES}`]
  : [];
const reporters = ['--test-reporter=spec', ...(times.length > 0 ? ['--test-reporter-destination=stdout', ...times] : [])];
const run = tests === undefined ? files : files.map((f) => join(tests, relative('test', f)).replace(/\.ts$/, '.js'));
const args = [...load, ...measure, '--test', ...reporters, `--test-concurrency=${concurrency}`, ...run];
const r = spawnSync(process.execPath, args, { stdio: 'inherit', env });
let status = r.status ?? 1;
if (filters.length === 0) {
  const check = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/check-answered-codes.ts', codes], { stdio: 'inherit', env });
  if (status === 0) status = check.status ?? 1;
}
process.exit(status);
