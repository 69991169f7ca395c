/**
 * After a whole test run (scripts/run-tests.mjs without a path filter): fails, naming them, for the error registry's
 * codes that no answer the tests read carried (test/support/unanswered-codes.ts).
 * Usage: node --import tsx scripts/check-answered-codes.ts <records-dir>
 */
import { ERROR_STATUS } from '../src/base/errors.js';
import { UNANSWERABLE, answerProblems, answeredIn } from '../test/support/unanswered-codes.js';

const dir = process.argv[2];
if (dir === undefined) {
  console.error('usage: check-answered-codes.ts <records-dir>');
  process.exit(2);
}
const answered = answeredIn(dir);
const problems = answerProblems(Object.keys(ERROR_STATUS), answered, UNANSWERABLE);
if (problems.length > 0) {
  console.error(`error registry: codes the tests never received (add a test that produces each, see CONTRIBUTING.md):\n${problems.join('\n')}`);
  process.exit(1);
}
console.log(`error registry: all ${Object.keys(ERROR_STATUS).length} codes received by a test (${Object.keys(UNANSWERABLE).length} excused)`);
