// A node:test reporter of each test file's wall time, for scripts/run-tests.mjs (DDN_TEST_TIMES=FILE): one JSON line
// per file, longest first — {"file", "wallMs" (from its dequeue, when its process starts, to its last event),
// "tests" (tests passed and failed, suites not counted), "failed"}. Node 20's own reporters give no file's time
// when the files run in processes of their own.
import { relative } from 'node:path';

export default async function* fileTimes(source) {
  const files = new Map();
  for await (const event of source) {
    if (typeof event.data?.file !== 'string') continue;
    // the compiled copy of a test file (.test-js-…/x/y.test.js) under its source's name, which the source map gives
    // the tests' own events
    const file = relative(process.cwd(), event.data.file.replace(/\/\.test-js-[^/]+\//, '/test/').replace(/\.js$/, '.ts'));
    const now = Date.now();
    let f = files.get(file);
    if (f === undefined) files.set(file, (f = { first: undefined, last: now, tests: 0, failed: 0 }));
    // every file is enqueued when the run starts; its process starts when it is dequeued
    if (event.type === 'test:dequeue' && f.first === undefined) f.first = now;
    f.last = now;
    const leaf = event.data.details?.type !== 'suite' && event.data.name !== event.data.file;
    if (event.type === 'test:pass' && leaf) f.tests++;
    if (event.type === 'test:fail' && leaf) {
      f.tests++;
      f.failed++;
    }
  }
  const rows = [...files].map(([file, f]) => ({ file, wallMs: f.last - (f.first ?? f.last), tests: f.tests, failed: f.failed }));
  rows.sort((a, b) => b.wallMs - a.wallMs);
  for (const row of rows) yield `${JSON.stringify(row)}\n`;
}
