/**
 * The per-file times reporter of scripts/run-tests.mjs (DDN_TEST_TIMES): a test file's events — those of its
 * compiled copy's process (`.test-js-…/x/y.test.js`) and those of its tests, which the source maps name by the
 * source (`test/x/y.test.ts`) — make one row under the source's name, with its tests and failures counted
 * (suites and the file's own entry not).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fileTimes, { type TestEvent } from '../../scripts/test-times-reporter.mjs';

async function* events(list: TestEvent[]): AsyncGenerator<TestEvent> {
  for (const e of list) yield e;
}

async function rows(list: TestEvent[]): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for await (const line of fileTimes(events(list))) out.push(JSON.parse(line) as Record<string, unknown>);
  return out;
}

describe('the per-file times reporter', () => {
  it('gives one row per test file under its source name, counting its tests and failures', async () => {
    const compiled = join(process.cwd(), '.test-js-AbC123', 'cli', 'x.test.js');
    const source = join(process.cwd(), 'test', 'cli', 'x.test.ts');
    const other = join(process.cwd(), '.test-js-AbC123', 'base', 'y.test.js');
    const got = await rows([
      { type: 'test:enqueue', data: { file: compiled, name: compiled, nesting: 0 } },
      { type: 'test:dequeue', data: { file: compiled, name: compiled, nesting: 0 } },
      { type: 'test:enqueue', data: { file: other, name: other, nesting: 0 } },
      { type: 'test:pass', data: { file: source, name: 'sends', nesting: 1, details: { type: 'test' } } },
      { type: 'test:fail', data: { file: source, name: 'receives', nesting: 1, details: { type: 'test' } } },
      { type: 'test:fail', data: { file: source, name: 'the CLI', nesting: 0, details: { type: 'suite' } } },
      { type: 'test:diagnostic', data: { nesting: 0 } },
      { type: 'test:fail', data: { file: compiled, name: compiled, nesting: 0, details: { type: 'test' } } },
      { type: 'test:pass', data: { file: other, name: 'one', nesting: 0, details: { type: 'test' } } },
    ]);
    assert.deepEqual(
      got.map(({ file, tests, failed }) => ({ file, tests, failed })).sort((a, b) => String(a.file).localeCompare(String(b.file))),
      [
        { file: 'test/base/y.test.ts', tests: 1, failed: 0 },
        { file: 'test/cli/x.test.ts', tests: 2, failed: 1 },
      ],
    );
    for (const row of got) assert.ok(Number.isInteger(row.wallMs) && (row.wallMs as number) >= 0, `${String(row.file)}: a wall time`);
  });
});
