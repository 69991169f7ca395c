/**
 * The error codes the tests' answers carried: every error answer the contract checks read
 * (test/support/contract-check.ts, test/support/inject-contract.ts) has its `code` appended to a file of this test
 * process under `DDN_TEST_CODES_DIR` (set by scripts/run-tests.mjs to a fresh directory). After a whole run,
 * scripts/check-answered-codes.ts fails for a registry code no answer carried. Without the variable nothing is kept.
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';

const seen = new Set<string>();

/** Keeps the `code` of an error answer (`status` ≥ 400, a body with a string `code`) for the run's check. */
export function recordAnswer(status: number, body: unknown): void {
  const dir = process.env.DDN_TEST_CODES_DIR;
  if (dir === undefined || dir === '' || status < 400) return;
  if (typeof body !== 'object' || body === null || !('code' in body)) return;
  const code = (body as { code: unknown }).code;
  if (typeof code !== 'string' || seen.has(code)) return;
  seen.add(code);
  appendFileSync(join(dir, `${process.pid}.txt`), `${code}\n`);
}
