/**
 * How the suites start `ddn` as a child process (`ddn serve`, `ddn mirror`, the CLI's commands): the node arguments
 * before the command's own. A run of scripts/run-tests.mjs compiles src/ to JavaScript once (esbuild, file by file,
 * laid out as `npm run build` lays out dist/) and names its entry in DDN_TEST_DDN_ENTRY: a child then starts in
 * about half the CPU of one that loads the sources through tsx (≈1.4 s instead of ≈3 s for `ddn serve` on the
 * 2-core machine), its worker threads without a TypeScript loader each; the run's compiled test files import the
 * same copy. A test file run on its own (`node --import tsx --test FILE`), or a coverage run, starts the sources
 * through tsx.
 */
import { fileURLToPath } from 'node:url';

const TSX = import.meta.resolve('tsx');
const SOURCES = fileURLToPath(new URL('../../src/cli/entry-dev.ts', import.meta.url));

/** `process.execPath`'s arguments that run `ddn` (followed by its command and options). */
export function ddnArgv(): string[] {
  const compiled = process.env.DDN_TEST_DDN_ENTRY;
  return compiled === undefined || compiled === '' ? ['--import', TSX, SOURCES] : [compiled];
}
