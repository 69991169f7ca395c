/**
 * The lint rules that guard the layers (eslint.config.js over layers.cjs), run through ESLint's API with a copy of
 * the real configuration on a fixture tree shaped like the repository: a pure file reading the clock or the
 * environment, and a floating or misused promise anywhere, must be reported under their rule; a pure file taking
 * time as a parameter, a platform edge or an impure layer reading the clock, and an awaited or deliberately voided
 * promise must not be.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const root = fileURLToPath(new URL('../..', import.meta.url));

const CLOCK_AND_ENV: Record<string, string> = {
  'date-now': 'export const t = (): number => Date.now();\n',
  'new-date': 'export const t = (): number => new Date().getTime();\n',
  'performance-now': 'export const t = (): number => performance.now();\n',
  'process-env': "export const e = (): string | undefined => process.env['DDN_X'];\n",
  'destructured-env': 'const { env } = process;\nexport const e = env;\n',
};
const PURE_FOLDERS = ['protocol', 'codec', 'crypto', 'wire', 'ports', 'ledger/runtime'];

const FLOATING = 'async function work(): Promise<void> {}\nexport function run(): void {\n  work();\n}\n';
const MISUSED = "import type { EventEmitter } from 'node:events';\nexport function on(e: EventEmitter): void {\n  e.on('x', async () => {});\n}\n";
const HANDLED =
  'async function work(): Promise<void> {}\nexport async function run(): Promise<void> {\n  await work();\n  void work().catch(() => undefined);\n}\n';

/** Fixture path → its text and the rules ESLint must report for it (exactly). */
const CASES: Record<string, { code: string; rules: string[] }> = {
  ...Object.fromEntries(
    PURE_FOLDERS.flatMap((folder) =>
      Object.entries(CLOCK_AND_ENV).map(([what, code]) => [
        `src/${folder}/planted-${what}.ts`,
        { code, rules: [what === 'new-date' ? 'no-restricted-syntax' : 'no-restricted-properties'] },
      ]),
    ),
  ),
  'src/base/bytes.ts': { code: CLOCK_AND_ENV['date-now']!, rules: ['no-restricted-properties'] },
  'src/protocol/clean.ts': { code: 'export const t = (nowMs: number): Date => new Date(nowMs);\n', rules: [] },
  'src/ledger/chain.ts': { code: CLOCK_AND_ENV['performance-now']!, rules: [] },
  'src/ledger/production.ts': { code: CLOCK_AND_ENV['performance-now']!, rules: [] },
  'src/base/clock.ts': { code: CLOCK_AND_ENV['date-now']!, rules: [] },
  'src/app/config.ts': { code: CLOCK_AND_ENV['process-env']!, rules: [] },
  'src/relay/floating.ts': { code: FLOATING, rules: ['@typescript-eslint/no-floating-promises'] },
  'test/relay/floating.test.ts': { code: FLOATING, rules: ['@typescript-eslint/no-floating-promises'] },
  'src/relay/misused.ts': { code: MISUSED, rules: ['@typescript-eslint/no-misused-promises'] },
  'src/relay/handled.ts': { code: HANDLED, rules: [] },
  'test/relay/node-test.test.ts': {
    code: "import { describe, it } from 'node:test';\ndescribe('a suite', () => {\n  it('a test', () => {});\n});\n",
    rules: [],
  },
};

let fixture = '';
let reported = new Map<string, string[]>();

before(async () => {
  fixture = mkdtempSync(join(tmpdir(), 'ddn-lint-rules-'));
  for (const name of ['eslint.config.js', 'layers.cjs', 'tsconfig.json', 'package.json']) copyFileSync(join(root, name), join(fixture, name));
  symlinkSync(join(root, 'node_modules'), join(fixture, 'node_modules'), 'dir');
  for (const [path, { code }] of Object.entries(CASES)) {
    mkdirSync(dirname(join(fixture, path)), { recursive: true });
    writeFileSync(join(fixture, path), code);
  }
  const results = await new ESLint({ cwd: fixture }).lintFiles(['src', 'test']);
  reported = new Map(results.map((r) => [relative(fixture, r.filePath), r.messages.map((m) => m.ruleId ?? `fatal: ${m.message}`)]));
});

after(() => rmSync(fixture, { recursive: true, force: true }));

function assertRules(paths: string[]): void {
  for (const path of paths) assert.deepEqual(reported.get(path), CASES[path]!.rules, path);
}

describe('the lint rules of the layers (ESLint with eslint.config.js)', () => {
  it('linted every planted file', () => {
    assert.deepEqual([...reported.keys()].sort(), Object.keys(CASES).sort());
  });

  it('reports Date.now(), new Date(), performance.now() and process.env in every pure layer and pure file of base', () => {
    assertRules(Object.keys(CASES).filter((p) => p.includes('/planted-') || p === 'src/base/bytes.ts'));
  });

  it('lets a pure file take time as a parameter, and a platform edge or an impure file read the clock', () => {
    assertRules(['src/protocol/clean.ts', 'src/ledger/chain.ts', 'src/ledger/production.ts', 'src/base/clock.ts', 'src/app/config.ts']);
  });

  it("reports a floating promise (in src/ and test/) and a misused one; not an awaited or voided one, nor node:test's", () => {
    assertRules(['src/relay/floating.ts', 'test/relay/floating.test.ts', 'src/relay/misused.ts', 'src/relay/handled.ts', 'test/relay/node-test.test.ts']);
  });
});
