/**
 * The error registry (src/base/errors.ts) against its documentation and its tests, as fastify checks its own error
 * codes: every code is in docs/api.md's "Error codes" table with its status, every row of the table is a code of the
 * registry, and every code is named (quoted) by at least one test. A code added without both fails here.
 * The other half — every code is *produced*: some test received an answer carrying it — needs the whole run: the
 * contract checks record each error code answered (test/support/answered-codes.ts) and scripts/run-tests.mjs, when
 * no path filter is given, ends with scripts/check-answered-codes.ts (test/support/unanswered-codes.ts), which fails
 * naming each code never received. Here: that check's own rules, on a planted registry.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_STATUS } from '../../src/base/errors.js';
import { UNANSWERABLE, answerProblems } from '../support/unanswered-codes.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const testDir = join(root, 'test');
/** This file's source, not counted as a test naming codes (scripts/run-tests.mjs runs a compiled copy of it elsewhere). */
const self = join(testDir, 'base', 'error-registry.test.ts');

/**
 * Codes no test needs to name, each with its reason. Keep it empty where a test can produce or name the code;
 * an entry for a code that a test names is itself a failure (the list cannot go stale).
 */
const UNTESTED: Record<string, string> = {};

interface Row {
  code: string;
  status: number;
  meaning: string;
}

/** The rows of the "## Error codes" section of `markdown` (`| \`code\` | status | meaning |`). */
function codeTable(markdown: string): Row[] {
  const start = markdown.indexOf('\n## Error codes\n');
  assert.ok(start >= 0, 'docs/api.md has a "## Error codes" section');
  const rest = markdown.slice(start + 1);
  const next = rest.indexOf('\n## ');
  const section = next < 0 ? rest : rest.slice(0, next);
  const rows: Row[] = [];
  for (const line of section.split('\n')) {
    const m = /^\|\s*`([a-z0-9_]+)`\s*\|\s*(\d{3})\s*\|(.*)\|\s*$/.exec(line);
    if (m) rows.push({ code: m[1]!, status: Number(m[2]), meaning: m[3]!.trim() });
  }
  return rows;
}

/** What is wrong between `registry` and the documented `rows`, one line each. */
function tableProblems(registry: Record<string, number>, rows: Row[]): string[] {
  const problems: string[] = [];
  const seen = new Map<string, Row>();
  for (const row of rows) {
    if (seen.has(row.code)) problems.push(`${row.code}: documented twice`);
    seen.set(row.code, row);
    if (!(row.code in registry)) problems.push(`${row.code}: documented but not in the registry`);
    else if (registry[row.code] !== row.status) problems.push(`${row.code}: documented as ${row.status}, the registry says ${registry[row.code]}`);
    if (row.meaning === '') problems.push(`${row.code}: no meaning`);
  }
  for (const code of Object.keys(registry)) if (!seen.has(code)) problems.push(`${code}: in the registry but not documented`);
  return problems;
}

/** The codes of `codes` that no text of `sources` names in quotes ('…', "…" or `…`). */
function unnamed(codes: string[], sources: string[]): string[] {
  const named = new Set<string>();
  for (const text of sources) for (const m of text.matchAll(/['"`]([a-z0-9_]+)['"`]/g)) named.add(m[1]!);
  return codes.filter((c) => !named.has(c));
}

/**
 * The generated OpenAPI types (`npm run openapi:types`) list every code a route declares: counting them, a code
 * named by no test would still pass once a route lists it.
 */
const GENERATED = join(testDir, 'support/openapi-types');

/** The paths of the hand-written test sources under `dir` (not this file, not the generated types). */
function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      if (path !== GENERATED) out.push(...testFiles(path));
    } else if (/\.(ts|json)$/.test(e.name) && path !== self) out.push(path);
  }
  return out;
}

function testSources(dir: string): string[] {
  return testFiles(dir).map((path) => readFileSync(path, 'utf8'));
}

describe('the error registry', () => {
  const registry: Record<string, number> = ERROR_STATUS;
  const codes = Object.keys(registry);

  it('docs/api.md documents every code with its status, and only codes of the registry', () => {
    const rows = codeTable(readFileSync(join(root, 'docs/api.md'), 'utf8'));
    assert.deepEqual(tableProblems(registry, rows), []);
    assert.equal(rows.length, codes.length);
  });

  it('counts only hand-written tests: not the generated OpenAPI types', () => {
    const files = testFiles(testDir);
    assert.ok(files.some((f) => f.startsWith(join(testDir, 'directory'))));
    assert.deepEqual(
      files.filter((f) => f.startsWith(GENERATED)),
      [],
    );
  });

  it('every code is produced or asserted by at least one test', () => {
    const notNamed = unnamed(codes, testSources(testDir));
    const missing = notNamed.filter((c) => !(c in UNTESTED));
    assert.deepEqual(missing, [], `codes no test under ${relative(root, testDir)}/ names`);
    const stale = Object.keys(UNTESTED).filter((c) => !notNamed.includes(c));
    assert.deepEqual(stale, [], 'exceptions that are no longer needed');
  });

  it('the checks fail on a missing, a wrong, a twice documented and an unknown code, and on an unnamed code', () => {
    const planted = [
      '## Error codes',
      '| `code` | Status | Meaning |',
      '|---|---|---|',
      '| `a_code` | 400 | a |',
      '| `a_code` | 400 | a |',
      '| `b_code` | 404 | b |',
      '| `not_registered` | 500 | c |',
      '',
      '## Next',
      '| `after_the_section` | 400 | not read |',
    ].join('\n');
    const rows = codeTable(`intro\n${planted}`);
    assert.deepEqual(
      rows.map((r) => r.code),
      ['a_code', 'a_code', 'b_code', 'not_registered'],
    );
    assert.deepEqual(tableProblems({ a_code: 400, b_code: 409, c_code: 422 }, rows), [
      'a_code: documented twice',
      'b_code: documented as 404, the registry says 409',
      'not_registered: documented but not in the registry',
      'c_code: in the registry but not documented',
    ]);
    assert.deepEqual(unnamed(['a_code', 'b_code', 'c_code'], ["assert.equal(x, 'a_code')", 'code: `b_code`, c_code']), ['c_code']);
  });

  it("the run's check fails for a registry code no test received, and for a stale or unknown excuse", () => {
    assert.deepEqual(answerProblems(['a_code', 'b_code'], new Set(['a_code', 'b_code']), {}), []);
    assert.deepEqual(answerProblems(['a_code', 'planted_code', 'c_code'], new Set(['a_code']), { c_code: 'only a child process answers it' }), [
      'planted_code: no test received an answer with this code',
    ]);
    assert.deepEqual(answerProblems(['a_code'], new Set(['a_code']), { a_code: 'stale', gone_code: 'unknown' }), [
      'a_code: excused but a test received it — remove it from UNANSWERABLE',
      'gone_code: excused but not in the registry',
    ]);
  });

  it("every excuse of the run's check names a registry code and gives its reason", () => {
    for (const [code, reason] of Object.entries(UNANSWERABLE)) {
      assert.ok(code in registry, `${code} is in the registry`);
      assert.ok(reason.length > 20, `${code} has a reason`);
    }
  });
});
