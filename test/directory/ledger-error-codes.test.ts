/**
 * Ledger rejections mapped to their http-api.md §1.1 code, status and `details.ledger_error`, for the names the ledger
 * suites raise but no HTTP flow reaches (counters at 2^64; persona attestations, which the Directory signs itself
 * with an approved attestor key; names the ledger no longer raises). Over HTTP, test/directory/applications.test.ts produces
 * `did_controls_application`, `too_many_applications` and `too_many_linked_dids`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError, ERROR_STATUS } from '../../src/base/errors.js';
import { codeForLedgerError, ledgerError, txErrorBody } from '../../src/directory/ledger-errors.js';
import { jsonInteger } from '../../src/directory/submission.js';
import { LedgerFailure } from '../../src/ledger/errors.js';

const CASES: [ledgerName: string, code: string, status: number][] = [
  ['DidControlsApplication', 'did_controls_application', 409],
  ['PolicyLinksRemoved', 'policy_links_removed', 400],
  ['PolicyRefTooLong', 'policy_links_removed', 400],
  ['TooManyPolicyRefs', 'policy_links_removed', 400],
  ['InvalidPersonaAttestation', 'invalid_persona_attestation', 403],
  ['PersonaAttestorNotApproved', 'persona_attestor_not_approved', 403],
  ['AuthorizationNonceOverflow', 'nonce_overflow', 409],
  ['RevisionOverflow', 'revision_overflow', 409],
  ['TooManyApplicationsForControlDid', 'too_many_applications', 409],
  ['TooManyLinkedDids', 'too_many_linked_dids', 409],
  ['LegacyPolicyDeprecated', 'legacy_policy_deprecated', 410],
  ['SomethingTheDirectoryDoesNotKnow', 'chain_submission_rejected', 422],
];

describe('ledger rejections → error codes (http-api.md §1.1)', () => {
  for (const [name, code, status] of CASES) {
    it(`${name} → ${status} ${code}`, () => {
      const e = ledgerError(new LedgerFailure(name, 'DidRegistry'));
      assert.ok(e instanceof DdnError);
      assert.equal(e.code, code);
      assert.equal(e.status, status);
      assert.equal(ERROR_STATUS[e.code], status);
      assert.equal(e.details?.ledger_error, name);
      assert.deepEqual(txErrorBody({ name }), { code, message: `ledger rejected the change: ${name}`, ledger_error: name });
    });
  }

  it('a context never turns these into another code', () => {
    for (const [name, code] of CASES) assert.equal(codeForLedgerError(name, undefined, { fullDocument: true, didIsDeactivated: true }), code);
  });

  it('an application nonce past the JSON safe-integer range is 409 nonce_overflow', () => {
    assert.equal(jsonInteger(BigInt(Number.MAX_SAFE_INTEGER)), Number.MAX_SAFE_INTEGER);
    assert.throws(
      () => jsonInteger(BigInt(Number.MAX_SAFE_INTEGER) + 1n),
      (e: unknown) => e instanceof DdnError && e.code === 'nonce_overflow' && e.status === 409,
    );
  });
});
