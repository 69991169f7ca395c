/**
 * The "produced" half of the error registry check (test/base/error-registry.test.ts names the codes; this sees them
 * answered): which registry codes no answer of a whole test run carried (test/support/answered-codes.ts records
 * them), less the codes that cannot be answered where the contract checks look, each with its reason.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Codes no test answer can carry through the contract checks, each with the reason and the test that shows it
 * otherwise. Keep it as short as the truth allows: an entry whose code was answered fails the check (it cannot go
 * stale).
 */
export const UNANSWERABLE: Readonly<Record<string, string>> = {};

/** The codes recorded under `dir` (one file per test process, one code a line). */
export function answeredIn(dir: string): Set<string> {
  const codes = new Set<string>();
  for (const name of readdirSync(dir)) {
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) if (line !== '') codes.add(line);
  }
  return codes;
}

/** What is wrong: registry codes never answered and not excused, and excuses for codes that were answered. */
export function answerProblems(registry: readonly string[], answered: ReadonlySet<string>, excused: Readonly<Record<string, string>>): string[] {
  const problems: string[] = [];
  for (const code of registry) if (!answered.has(code) && !(code in excused)) problems.push(`${code}: no test received an answer with this code`);
  for (const code of Object.keys(excused)) {
    if (!registry.includes(code)) problems.push(`${code}: excused but not in the registry`);
    else if (answered.has(code)) problems.push(`${code}: excused but a test received it — remove it from UNANSWERABLE`);
  }
  return problems;
}
