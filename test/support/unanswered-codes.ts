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
export const UNANSWERABLE: Readonly<Record<string, string>> = {
  // Ledger rejections no HTTP flow reaches (test/directory/ledger-error-codes.test.ts maps each name to its code,
  // status and body, and says why): counters at 2^64 or past 2^53, persona attestations the Directory signs itself
  // with an approved key, removed policy-link actions, a name the ledger no longer raises, an unknown name.
  nonce_overflow: 'a counter past 2^53 / 2^64; ledger-error-codes.test.ts "an application nonce past the JSON safe-integer range"',
  revision_overflow: 'an application revision at 2^64; ledger-error-codes.test.ts "RevisionOverflow → 409 revision_overflow"',
  invalid_persona_attestation: 'the Directory attests personas itself; ledger-error-codes.test.ts "InvalidPersonaAttestation → 403 …"',
  persona_attestor_not_approved: 'the Directory attests with an approved key; ledger-error-codes.test.ts "PersonaAttestorNotApproved → 403 …"',
  policy_links_removed: 'the policy-link actions are refused before the ledger; ledger-error-codes.test.ts "PolicyLinksRemoved → 400 …"',
  legacy_policy_deprecated: 'a name the ledger no longer raises; ledger-error-codes.test.ts "LegacyPolicyDeprecated → 410 …"',
  chain_submission_rejected: 'a ledger name the Directory does not know; ledger-error-codes.test.ts "SomethingTheDirectoryDoesNotKnow → 422 …"',
};

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
