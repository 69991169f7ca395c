/**
 * The refusal order of the DNS persona writes (http-api.md §7.4, §7.7): register / renew and both transfer routes.
 * Their parsers read every field before the handler, but a field whose refusal the spec places after the challenge's
 * checks keeps that place; each ladder below sends every rung with all later faults, so a refusal moved earlier or
 * later fails it (test/support/refusal-ladder.ts).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertAccepted, assertError, kid, signHex } from '../support/directory-flows.js';
import { climb, faulted, type Rung } from '../support/refusal-ladder.js';
import {
  createChallenge,
  enc,
  operatorOf,
  putPersona,
  registerDnsPersona,
  signedRequest,
  startPersonaDirectory,
  transferPersona,
  verified,
  type Operator,
  type PersonaNetwork,
} from '../support/persona-flows.js';

type Body = Record<string, unknown>;

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const HEX32 = `0x${'00'.repeat(32)}`;
const CONSTRAINTS = {
  requested_cache_seconds: 3600,
  max_http_envelope_bytes: 1_000_000,
  max_unchunked_message_bytes: 500_000,
  max_chunk_bytes: 100_000,
  max_replicas: 2,
};
/** Past a challenge's 48 h. */
const EXPIRED_MS = 48 * 3_600_000 + 1;

const plusOne = (v: unknown): string => (BigInt(v as string | number) + 1n).toString();

/** The attestation fields' faults (§7.4, §7.7): each field's syntax, then its comparison with the verified intent. */
function attestationRungs(good: Body): Rung[] {
  const cpm = (field: string): Pick<Rung, 'status' | 'code' | 'field'> => ({ status: 403, code: 'canonical_payload_mismatch', field });
  const bad = (field: string): Pick<Rung, 'status' | 'code' | 'field'> => ({ status: 400, code: 'invalid_request', field });
  return [
    { fault: { verification_expires_at: 'soon' }, ...bad('verification_expires_at') },
    { fault: { verification_expires_at: (good.verification_expires_at as number) + 1 }, ...cpm('verification_expires_at') },
    { fault: { attestor: 'zz' }, ...bad('attestor') },
    { fault: { attestor: HEX32 }, ...cpm('attestor') },
    { fault: { attestation_signature: 'zz' }, ...bad('attestation_signature') },
    { fault: { attestation_signature: `0x00${'22'.repeat(64)}` }, ...cpm('attestation_signature') },
  ];
}

describe('persona writes: refusal order', () => {
  let n: PersonaNetwork;
  let op: Operator;
  let other: Operator;
  let third: Operator;
  before(async () => {
    n = await startPersonaDirectory();
    op = await operatorOf(n.h, 41);
    other = await operatorOf(n.h, 42);
    third = await operatorOf(n.h, 43);
  });
  after(() => n.close());

  it('PUT /personas/{p} (renewal): path, body syntax, the challenge, the intent field by field, the bytes, the signature', async () => {
    const { h } = n;
    const p = 'renew-order.example.org';
    const registration = await registerDnsPersona(n, p, op);
    const used = registration.challenge;
    const renewal = await createChallenge(h, p, op.did, 'renew_persona');
    const v = await verified(n, renewal, { controller_keys: ['root'] });
    const unverified = await createChallenge(h, p, op.did, 'renew_persona');
    const elsewhere = await createChallenge(h, 'elsewhere-a.example.org', op.did, 'register_persona');
    const good = signedRequest(v, op.key);
    const cpm = (field: string): Pick<Rung, 'status' | 'code' | 'field'> => ({ status: 403, code: 'canonical_payload_mismatch', field });
    const rungs: Rung[] = [
      // the route's parser, before any state
      { fault: { persona: 'other.example.org' }, status: 400, code: 'path_body_mismatch' },
      { fault: { action: 'revoke_persona' }, status: 400, code: 'action_mismatch' },
      { fault: { operator_did: 'x' }, status: 400, code: 'invalid_did' },
      { fault: { challenge_id: 7 }, status: 400, code: 'invalid_request', field: 'challenge_id' },
      { fault: { nonce: 'x' }, status: 400, code: 'invalid_nonce' },
      { fault: { valid_until: 'soon' }, status: 400, code: 'invalid_valid_until' },
      { fault: { signer_key_id: '' }, status: 400, code: 'invalid_request', field: 'signer_key_id' },
      { fault: { signature: 'abc' }, status: 400, code: 'invalid_signature_encoding' },
      { fault: { canonical_payload: '!!' }, status: 400, code: 'invalid_canonical_payload' },
      // the challenge (§7.3's checks, then verified)
      { fault: { challenge_id: UNKNOWN_ID }, status: 404, code: 'challenge_not_found' },
      { fault: { challenge_id: elsewhere.challenge_id }, status: 403, code: 'challenge_mismatch', field: 'persona' },
      { fault: { challenge_id: used.challenge_id }, status: 409, code: 'challenge_already_used' },
      { fault: { challenge_id: unverified.challenge_id }, status: 409, code: 'challenge_not_verified' },
      { fault: { operator_did: other.did }, status: 403, code: 'challenge_mismatch', field: 'operator_did' },
      { fault: { action: 'register_persona' }, status: 403, code: 'challenge_mismatch', field: 'action' },
      // every intent field equals the verified intent; a deferred field's syntax comes at its comparison
      { fault: { nonce: plusOne(good.nonce) }, ...cpm('nonce') },
      { fault: { valid_until: plusOne(good.valid_until) }, ...cpm('valid_until') },
      { fault: { signer_key_id: kid(op.did, 'key-1') }, ...cpm('signer_key_id') },
      ...attestationRungs(good),
      { fault: { controller_threshold: 'one' }, status: 400, code: 'invalid_request', field: 'controller_threshold' },
      { fault: { controller_threshold: 2 }, ...cpm('controller_threshold') },
      { fault: { controller_keys: 'root' }, status: 400, code: 'invalid_request', field: 'controller_keys' },
      { fault: { controller_keys: ['root', 'x'] }, ...cpm('controller_keys') },
      { fault: { delivery_constraints: 'none' }, status: 400, code: 'invalid_delivery_constraints' },
      { fault: { delivery_constraints: CONSTRAINTS }, ...cpm('delivery_constraints') },
      // the bytes, then the ledger's signature check
      { fault: { canonical_payload: '0x0102' }, status: 400, code: 'invalid_canonical_payload' },
      // another persona payload (the registration's): it decodes, and differs from the one rebuilt from the fields
      { fault: { canonical_payload: registration.verification.canonical_payload }, status: 403, code: 'canonical_payload_mismatch' },
      { fault: { signature: signHex(other.key, v.payload_to_sign as string) }, status: 403, code: 'invalid_signature' },
    ];
    await climb((body) => putPersona(h, p, body), good, rungs);
    // The path comes first: its name's syntax, then its kind.
    assertError(await putPersona(h, 'bad..name', faulted(good, rungs)), 400, 'invalid_persona');
    assertError(await putPersona(h, 'single', faulted(good, rungs)), 400, 'persona_not_dns');
    assertAccepted(await putPersona(h, p, good));
    h.settle();
    // An expired challenge (of another persona here) is refused before it is matched with the path.
    h.clock.advance(EXPIRED_MS);
    const late = faulted(good, rungs, (r) => r.field === 'persona');
    assertError(await putPersona(h, p, late), 410, 'challenge_expired');
  });

  it('transfer: prepare and submit, the challenge before the fields it makes meaningful', async () => {
    const { h } = n;
    const p = 'transfer-order.example.org';
    // `op` operates the persona after a first transfer from `third`, whose challenge is used now.
    await registerDnsPersona(n, p, third);
    const used = (await transferPersona(n, p, third, op)).verification;
    const transfer = await createChallenge(h, p, other.did, 'transfer_persona');
    const v = await verified(n, transfer, { controller_keys: ['root'] });
    const unverified = await createChallenge(h, p, other.did, 'transfer_persona');
    const renewal = await createChallenge(h, p, op.did, 'renew_persona');
    const elsewhere = await createChallenge(h, 'elsewhere-b.example.org', op.did, 'register_persona');
    const newSig = signHex(other.key, v.acceptance_payload as string);
    const challengeRungs = (current: Body): Rung[] => [
      { fault: { challenge_id: UNKNOWN_ID }, status: 404, code: 'challenge_not_found' },
      { fault: { challenge_id: elsewhere.challenge_id }, status: 403, code: 'challenge_mismatch', field: 'persona' },
      { fault: { challenge_id: used.challenge_id }, status: 409, code: 'challenge_already_used' },
      { fault: { challenge_id: renewal.challenge_id }, status: 403, code: 'challenge_mismatch', field: 'action' },
      { fault: { challenge_id: unverified.challenge_id }, status: 409, code: 'challenge_not_verified' },
      { fault: current, status: 403, code: 'challenge_mismatch', field: 'operator_did' },
    ];

    // POST …/transfer/prepare
    const prepUrl = `/personas/${enc(p)}/transfer/prepare`;
    const base = { operator_did: op.did, challenge_id: transfer.challenge_id, new_operator_signature: newSig, signer_key_id: 'root' };
    const prepRungs: Rung[] = [
      { fault: { persona: 'other.example.org' }, status: 400, code: 'path_body_mismatch' },
      { fault: { operator_did: 'x' }, status: 400, code: 'invalid_did' },
      { fault: { challenge_id: 7 }, status: 400, code: 'invalid_request', field: 'challenge_id' },
      ...challengeRungs({ operator_did: third.did }),
      { fault: { new_operator_signature: 'short' }, status: 400, code: 'invalid_signature_encoding', field: 'new_operator_signature' },
      { fault: { signer_key_id: '' }, status: 400, code: 'invalid_request', field: 'signer_key_id' },
      { fault: { valid_until: 'soon' }, status: 400, code: 'invalid_valid_until' },
      { fault: { signer_key_id: kid(op.did, 'nope') }, status: 403, code: 'signer_not_authorized' },
      { fault: { new_operator_signature: `0x${'00'.repeat(64)}` }, status: 403, code: 'invalid_signature' },
    ];
    await climb((body) => h.call('POST', prepUrl, body), base, prepRungs);
    assertError(await h.call('POST', `/personas/single/transfer/prepare`, faulted(base, prepRungs)), 400, 'persona_not_dns');
    const prep = await h.call('POST', prepUrl, base);
    assert.equal(prep.status, 200, JSON.stringify(prep.body));

    // PUT …/transfer
    const good = signedRequest(prep.body, op.key);
    const cpm = (field: string): Pick<Rung, 'status' | 'code' | 'field'> => ({ status: 403, code: 'canonical_payload_mismatch', field });
    const rungs: Rung[] = [
      // the route's parser, before any state
      { fault: { persona: 'other.example.org' }, status: 400, code: 'path_body_mismatch' },
      { fault: { action: 'renew_persona' }, status: 400, code: 'action_mismatch' },
      { fault: { operator_did: 'x' }, status: 400, code: 'invalid_did' },
      { fault: { nonce: 'x' }, status: 400, code: 'invalid_nonce' },
      { fault: { valid_until: 'soon' }, status: 400, code: 'invalid_valid_until' },
      { fault: { signer_key_id: '' }, status: 400, code: 'invalid_request', field: 'signer_key_id' },
      { fault: { signature: 'abc' }, status: 400, code: 'invalid_signature_encoding', field: 'signature' },
      { fault: { canonical_payload: '!!' }, status: 400, code: 'invalid_canonical_payload' },
      { fault: { new_operator_signature: 'short' }, status: 400, code: 'invalid_signature_encoding', field: 'new_operator_signature' },
      { fault: { challenge_id: 7 }, status: 400, code: 'invalid_request', field: 'challenge_id' },
      // the challenge (a used one answers only an identical pending resubmission)
      ...challengeRungs({ operator_did: third.did }),
      // every transfer field equals the verified intent; a deferred field's syntax comes at its comparison
      { fault: { new_operator_did: 'x' }, status: 400, code: 'invalid_did', field: 'new_operator_did' },
      { fault: { new_operator_did: op.did }, ...cpm('new_operator_did') },
      { fault: { new_controller_keys: 'root' }, status: 400, code: 'invalid_request', field: 'new_controller_keys' },
      { fault: { new_controller_keys: ['other'] }, ...cpm('new_controller_keys') },
      { fault: { new_controller_threshold: 'one' }, status: 400, code: 'invalid_request', field: 'new_controller_threshold' },
      { fault: { new_controller_threshold: 2 }, ...cpm('new_controller_threshold') },
      { fault: { delivery_constraints: 'none' }, status: 400, code: 'invalid_delivery_constraints' },
      { fault: { delivery_constraints: CONSTRAINTS }, ...cpm('delivery_constraints') },
      { fault: { new_operator_signer_key_id: 7 }, status: 400, code: 'invalid_request', field: 'new_operator_signer_key_id' },
      { fault: { new_operator_signer_key_id: 'x' }, ...cpm('new_operator_signer_key_id') },
      ...attestationRungs(good),
      // the bytes (rebuilt with the new operator's signature), then the ledger's signature check
      { fault: { canonical_payload: '0x0102' }, status: 400, code: 'invalid_canonical_payload' },
      { fault: { new_operator_signature: `0x${'00'.repeat(64)}` }, status: 403, code: 'canonical_payload_mismatch' },
      { fault: { signature: signHex(other.key, prep.body.payload_to_sign as string) }, status: 403, code: 'invalid_signature' },
    ];
    const url = `/personas/${enc(p)}/transfer`;
    await climb((body) => h.call('PUT', url, body), good, rungs);
    assertError(await h.call('PUT', `/personas/single/transfer`, faulted(good, rungs)), 400, 'persona_not_dns');
    assertAccepted(await h.call('PUT', url, good));
    h.settle();
    // An expired challenge (of another persona here) is refused before it is matched with the path.
    h.clock.advance(EXPIRED_MS);
    const late = faulted(good, rungs, (r) => r.field === 'persona');
    assertError(await h.call('PUT', url, late), 410, 'challenge_expired');
    const latePrep = faulted(base, prepRungs, (r) => r.field === 'persona');
    assertError(await h.call('POST', prepUrl, latePrep), 410, 'challenge_expired');
  });
});
