/**
 * DNS personas over HTTP (http-api.md §7.1, §7.4, §7.6, §7.7): the lifecycle register → renew → revoke → renew →
 * rotate → transfer with the reads and nonces after each step, and the error codes of every persona route.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseHex } from '../../src/base/bytes.js';
import { decodePersonaPayload } from '../../src/protocol/payloads/persona.js';
import { assertAccepted, assertError, kid, mutate, signHex, vmOf } from '../support/directory-flows.js';
import {
  controlPersona,
  createChallenge,
  enc,
  operatorNonce,
  operatorOf,
  prepareControl,
  publish,
  putPersona,
  readPersona,
  registerDnsPersona,
  renewDnsPersona,
  signedRequest,
  startPersonaDirectory,
  transferPersona,
  verified,
  verifyChallenge,
  type Operator,
  type PersonaNetwork,
} from '../support/persona-flows.js';

type Body = Record<string, unknown>;
const DAY = 86_400_000;

describe('DNS persona lifecycle over HTTP', () => {
  let n: PersonaNetwork;
  let op: Operator;
  let next: Operator;
  before(async () => {
    n = await startPersonaDirectory();
    op = await operatorOf(n.h, 21);
    next = await operatorOf(n.h, 22);
  });
  after(() => n.close());

  it('register → renew → revoke → renew → rotate → transfer', async () => {
    const { h } = n;
    const P = 'Shop.Example.COM.';
    const p = 'shop.example.com';

    // Nothing before registration: 404 on the read and on the nonce route.
    assertError(await h.call('GET', `/personas/${enc(p)}`), 404, 'persona_not_found');
    assertError(await h.call('GET', `/personas/${enc(p)}/nonces`), 404, 'persona_not_found');

    // Register (the path name is canonicalised; the controller set is the operator's root key).
    const reg = await registerDnsPersona(n, P, op, {
      controller_keys: ['root'],
      verification_days: 30,
      delivery_constraints: {
        requested_cache_seconds: 3600,
        max_http_envelope_bytes: 1_000_000,
        max_unchunked_message_bytes: 500_000,
        max_chunk_bytes: 100_000,
        max_replicas: 2,
      },
    });
    assert.equal(reg.challenge.persona, p);
    assert.equal(reg.verification.operation, 'Register');
    assert.equal(reg.submitted.operation, 'Register');
    assert.equal(reg.submitted.extrinsic, 'apply_persona_with_proof');
    assert.equal(reg.submitted.persona, p);
    assert.equal(reg.submitted.operator_did, op.did);
    assertAccepted({ status: 202, body: reg.submitted });
    let rec = await readPersona(h, P);
    // The record's name is `name`; no top-level `persona` (deployed clients read `persona` as the record).
    assert.equal(rec.name, p);
    assert.equal('persona' in rec, false);
    assert.equal(rec.kind, 'dns');
    assert.equal(rec.dns_required, true);
    assert.equal(rec.operator_did, op.did);
    assert.deepEqual(rec.controller_keys, ['root']);
    assert.equal(rec.controller_threshold, 1);
    assert.equal(rec.revision, 1);
    assert.equal(rec.active, true);
    assert.equal(rec.expired, false);
    assert.equal(rec.deliverable, true);
    assert.equal(rec.dns_proof_hash, reg.verification.dns_proof_hash);
    assert.equal(rec.verification_expires_at, reg.verification.verification_expires_at);
    assert.equal(rec.verification_expires_at, h.clock.nowMs() - 1 + 30 * DAY, 'now + verification_days');
    assert.deepEqual(rec.delivery_constraints, {
      requested_cache_seconds: 3600,
      effective_ttl_seconds: 3600,
      max_http_envelope_bytes: 1_000_000,
      max_unchunked_message_bytes: 500_000,
      max_chunk_bytes: 100_000,
      max_replicas: 2,
    });
    assert.deepEqual(rec.pending_operations, []);
    let nonces = (await h.call('GET', `/personas/${enc(p)}/nonces`)).body;
    assert.deepEqual(nonces, { persona: p, operator_did: op.did, persona_nonce: '1', operator_nonce: '1', policy_nonce: '0', policy_v3_nonce: '0' });
    // The challenge is used now.
    const used = await h.call('GET', `/personas/${enc(p)}/dns-challenges/${reg.challenge.challenge_id as string}`);
    assert.equal(used.body.status, 'used');

    // Renew: keeps the controllers and the constraints (none given), new revision, reactivates nothing yet.
    const ren = await renewDnsPersona(n, p, op, { verification_days: 60 });
    assert.equal(ren.submitted.operation, 'Renew');
    rec = await readPersona(h, p);
    assert.equal(rec.revision, 2);
    assert.equal((rec.delivery_constraints as Body).max_replicas, 2);
    assert.ok((rec.verification_expires_at as number) > h.clock.nowMs() + 59 * DAY);

    // Revoke: DELETE answers with the product spec's extrinsic name; the persona becomes inactive.
    const rev = await controlPersona(h, p, op, { action: 'revoke_persona' });
    assert.equal(rev.extrinsic, 'revoke_persona');
    assert.equal(rev.operation, 'Revoke');
    rec = await readPersona(h, p);
    assert.equal(rec.active, false);
    assert.equal(rec.deliverable, false);
    assert.equal(rec.revision, 3);

    // Renew again: reactivates under the same operator.
    await renewDnsPersona(n, p, op);
    rec = await readPersona(h, p);
    assert.equal(rec.active, true);
    assert.equal(rec.deliverable, true);
    assert.equal(rec.revision, 4);

    // Rotate: add VM #key-2 to the operator, then rotate to [root, #key-2] (the signer stays in the set).
    const key2 = (await import('../support/directory-flows.js')).keyOf(121);
    await mutate(h, op.did, op.key, 'AddVerificationMethod', { verification_method: vmOf(op.did, 'key-2', key2) });
    const rot = await controlPersona(h, p, op, { action: 'rotate_persona_controllers', controller_keys: ['root', kid(op.did, 'key-2')] });
    assert.equal(rot.operation, 'RotateControllers');
    rec = await readPersona(h, p);
    assert.deepEqual(rec.controller_keys, ['root', kid(op.did, 'key-2')]);
    assert.equal(rec.revision, 5);

    // Transfer to `next` (new controllers [root] of next, constraints cleared because absent).
    const before = (await h.call('GET', `/personas/${enc(p)}/nonces`)).body;
    const tr = await transferPersona(n, p, op, next);
    assert.equal(tr.submitted.operation, 'Transfer');
    assert.equal(tr.submitted.new_operator_did, next.did);
    rec = await readPersona(h, p);
    assert.equal(rec.operator_did, next.did);
    assert.deepEqual(rec.controller_keys, ['root']);
    assert.equal(rec.delivery_constraints, null);
    assert.equal(rec.revision, 6);
    nonces = (await h.call('GET', `/personas/${enc(p)}/nonces`)).body;
    assert.equal(nonces.operator_did, next.did);
    assert.equal(BigInt(nonces.persona_nonce as string), BigInt(before.persona_nonce as string) + 1n);
    assert.equal(await operatorNonce(h, op.did), (BigInt(before.operator_nonce as string) + 1n).toString());
    // The transferred payload carries the new operator's signature, bound into the signed bytes.
    const decoded = decodePersonaPayload(parseHex(tr.prepared.canonical_payload as string)!)!;
    assert.equal(decoded.operation.kind, 'Transfer');
  });
});

describe('persona submissions: error codes', () => {
  let n: PersonaNetwork;
  let op: Operator;
  let other: Operator;
  let seq = 0;
  const fresh = () => `p${++seq}.example.org`;
  before(async () => {
    n = await startPersonaDirectory();
    op = await operatorOf(n.h, 31);
    other = await operatorOf(n.h, 32);
  });
  after(() => n.close());

  it('PUT /personas: challenge states, intent mismatches and duplicates', async () => {
    const { h } = n;
    const p = fresh();
    const challenge = await createChallenge(h, p, op.did, 'register_persona');
    // Not verified yet: 409 challenge_not_verified (with a syntactically complete body).
    const fake: Body = {
      action: 'register_persona',
      operator_did: op.did,
      controller_keys: ['root'],
      challenge_id: challenge.challenge_id,
      verification_expires_at: 1,
      nonce: '0',
      valid_until: String(h.clock.nowMs() + 60_000),
      signer_key_id: 'root',
      attestor: `0x${'00'.repeat(32)}`,
      attestation_signature: `0x${'00'.repeat(65)}`,
      canonical_payload: '0x00',
      signature: `0x${'11'.repeat(64)}`,
    };
    assertError(await putPersona(h, p, fake), 409, 'challenge_not_verified');
    assertError(await putPersona(h, p, { ...fake, challenge_id: '00000000-0000-4000-8000-000000000000' }), 404, 'challenge_not_found');
    assertError(await putPersona(h, p, { ...fake, action: 'revoke_persona' }), 400, 'action_mismatch');
    assertError(await putPersona(h, p, { ...fake, persona: 'other.example.org' }), 400, 'path_body_mismatch');
    assertError(await putPersona(h, 'single', fake), 400, 'persona_not_dns');
    assertError(await putPersona(h, 'bad..name', fake), 400, 'invalid_persona');
    assertError(await putPersona(h, p, { ...fake, nonce: 'x' }), 400, 'invalid_nonce');
    assertError(await putPersona(h, p, { ...fake, valid_until: 'soon' }), 400, 'invalid_valid_until');
    assertError(await putPersona(h, p, { ...fake, signature: 'abc' }), 400, 'invalid_signature_encoding');
    assertError(await putPersona(h, p, { ...fake, canonical_payload: '!!' }), 400, 'invalid_canonical_payload');

    const v = await verified(n, challenge, { controller_keys: ['root'] });
    const good = signedRequest(v, op.key);
    // Every intent field must repeat the verification.
    const mismatches: [string, unknown][] = [
      ['controller_keys', ['root', 'x']],
      ['valid_until', String(BigInt(good.valid_until as string) + 1n)],
      ['verification_expires_at', (good.verification_expires_at as number) + 1],
      ['attestation_signature', `0x00${'22'.repeat(64)}`],
      ['signer_key_id', kid(op.did, 'key-1')],
    ];
    for (const [field, value] of mismatches) {
      const res = await putPersona(h, p, { ...good, [field]: value });
      assertError(res, 403, 'canonical_payload_mismatch');
      assert.equal((res.body.details as Body).field, field);
    }
    assertError(await putPersona(h, p, { ...good, canonical_payload: '0x0102' }), 400, 'invalid_canonical_payload');
    assertError(await putPersona(h, p, { ...good, operator_did: other.did }), 403, 'challenge_mismatch');
    assertError(await putPersona(h, p, { ...good, action: 'renew_persona' }), 403, 'challenge_mismatch');
    // A bad signature is the ledger's 403 invalid_signature, and leaves the challenge usable.
    assertError(await putPersona(h, p, { ...good, signature: signHex(other.key, v.payload_to_sign as string) }), 403, 'invalid_signature');
    const first = await putPersona(h, p, good);
    const tx = assertAccepted(first);
    // Identical resubmission while pending: same tx, duplicate.
    const dup = await putPersona(h, p, good);
    assert.equal(dup.status, 202);
    assert.equal(dup.body.tx_hash, tx);
    assert.equal(dup.body.duplicate, true);
    h.settle();
    assertError(await putPersona(h, p, good), 409, 'challenge_already_used');
    assertError(await verifyChallenge(h, challenge), 409, 'challenge_already_used');
  });

  it('renewal: controller_keys must repeat the stored set; signer a current controller', async () => {
    const { h } = n;
    const p = fresh();
    await registerDnsPersona(n, p, op);
    const challenge = await createChallenge(h, p, op.did, 'renew_persona');
    publish(n.dns, challenge);
    assertError(await verifyChallenge(h, challenge, { controller_keys: ['root', 'other'] }), 400, 'invalid_request');
    assertError(await verifyChallenge(h, challenge, { signer_key_id: kid(op.did, 'key-1') }), 403, 'signer_not_authorized');
    const v = await verified(n, challenge, { controller_keys: ['root'] });
    assert.deepEqual(v.controller_keys, ['root']);
    assert.equal((v.request as Body).controller_keys, undefined, 'renewal request omits the controller set');
    const res = await putPersona(h, p, { ...signedRequest(v, op.key), controller_keys: ['root'] });
    assertAccepted(res);
    h.settle();
  });

  it('revocation and rotation: prepare and submit errors', async () => {
    const { h } = n;
    const p = fresh();
    await registerDnsPersona(n, p, op);
    assertError(await prepareControl(h, 'nobody.example.org', { action: 'revoke_persona' }), 404, 'persona_not_found');
    // the persona's operator is looked up before the signer fields and the new set are refused (deferred by the parser)
    assertError(await prepareControl(h, 'nobody.example.org', { action: 'revoke_persona', signer_key_id: '' }), 404, 'persona_not_found');
    assertError(await prepareControl(h, 'nobody.example.org', { action: 'rotate_persona_controllers' }), 404, 'persona_not_found');
    const named = { action: 'revoke_persona', operator_did: op.did };
    assertError(await prepareControl(h, 'nobody.example.org', { ...named, signer_key_id: '' }), 400, 'invalid_request');
    assertError(await prepareControl(h, p, { action: 'rotate_persona_controllers' }), 400, 'invalid_request');
    assertError(await prepareControl(h, p, { action: 'delete_persona' }), 400, 'unsupported_action');
    assertError(await prepareControl(h, p, { action: 'revoke_persona', operator_did: other.did }), 403, 'invalid_persona_controller');
    assertError(await prepareControl(h, p, { action: 'revoke_persona', signer_key_id: kid(op.did, 'nope') }), 403, 'signer_not_authorized');
    assertError(await prepareControl(h, p, { action: 'revoke_persona', signer_key_id: kid(op.did, 'key-1') }), 403, 'signer_not_authorized');
    assertError(await prepareControl(h, p, { action: 'rotate_persona_controllers', controller_keys: ['other'] }), 403, 'invalid_persona_controller');
    assertError(await prepareControl(h, p, { action: 'rotate_persona_controllers', controller_keys: ['root', 'root'] }), 403, 'invalid_persona_controller');
    assertError(
      await prepareControl(h, p, { action: 'rotate_persona_controllers', controller_keys: ['root'], controller_threshold: 2 }),
      403,
      'invalid_persona_controller',
    );
    assertError(await prepareControl(h, p, { action: 'rotate_persona_controllers' }), 400, 'invalid_request');

    const prep = await prepareControl(h, p, { action: 'revoke_persona' });
    assert.equal(prep.status, 200, JSON.stringify(prep.body));
    assert.equal(prep.body.nonce_domain, 'operator_nonce');
    assert.equal(prep.body.nonce, await operatorNonce(h, op.did));
    assert.equal(prep.body.operation, 'Revoke');
    const body = signedRequest(prep.body, op.key);
    const url = `/personas/${enc(p)}`;
    assertError(await h.call('DELETE', url, { ...body, action: 'rotate_persona_controllers' }), 400, 'action_mismatch');
    assertError(await h.call('DELETE', url, { ...body, nonce: String(Number(body.nonce) + 1) }), 403, 'canonical_payload_mismatch');
    assertError(await h.call('DELETE', url, { ...body, persona: 'x.example.org' }), 400, 'path_body_mismatch');
    // Without operator_did the operator is the persona's: an unknown persona is 404; another payload is 403.
    assertError(
      await h.call('DELETE', `/personas/${enc('zz.example.org')}`, { ...body, persona: undefined, operator_did: undefined }),
      404,
      'persona_not_found',
    );
    assertError(await h.call('DELETE', `/personas/${enc('zz.example.org')}`, { ...body, persona: undefined }), 403, 'canonical_payload_mismatch');
    assertAccepted(await h.call('DELETE', url, body));
    h.settle();
    // A stale nonce after the revocation was applied: the ledger's operator nonce mismatch.
    const again = await h.call('DELETE', url, body);
    assertError(again, 409, 'nonce_mismatch');
    assert.equal((again.body.details as Body).nonce_domain, 'operator_nonce');
    // Revoking a revoked persona: 409 persona_inactive (ledger); rotating it too.
    assertError(await prepareControl(h, p, { action: 'revoke_persona' }), 409, 'persona_inactive');
    assertError(await prepareControl(h, p, { action: 'rotate_persona_controllers', controller_keys: ['root'] }), 409, 'persona_inactive');
  });

  it('transfer: prepare checks the new operator’s acceptance signature and the challenge', async () => {
    const { h } = n;
    const p = fresh();
    await registerDnsPersona(n, p, op);
    assertError(await h.call('POST', `/personas/${enc(p)}/dns-challenges`, { operator_did: op.did, action: 'transfer_persona' }), 400, 'invalid_request');
    const challenge = await createChallenge(h, p, other.did, 'transfer_persona');
    assert.equal(challenge.current_operator_did, op.did);
    assert.equal(challenge.operator_nonce, await operatorNonce(h, op.did), 'the current operator’s nonce');
    const prepUrl = `/personas/${enc(p)}/transfer/prepare`;
    const base = { operator_did: op.did, challenge_id: challenge.challenge_id, new_operator_signature: `0x${'00'.repeat(64)}` };
    assertError(await h.call('POST', prepUrl, base), 409, 'challenge_not_verified');
    // The new operator verifies with a key that must be its own.
    publish(n.dns, challenge);
    assertError(await verifyChallenge(h, challenge, { signer_key_id: kid(op.did, 'key-1') }), 403, 'signer_not_authorized');
    const v = await verified(n, challenge, { controller_keys: ['root'] });
    assert.equal(v.operation, 'Transfer');
    assert.match(v.acceptance_payload as string, /^0x[0-9a-f]+$/);
    assert.equal(v.canonical_payload, undefined);
    assertError(await h.call('POST', prepUrl, base), 403, 'invalid_signature');
    const newSig = signHex(other.key, v.acceptance_payload as string);
    assertError(await h.call('POST', prepUrl, { ...base, new_operator_signature: newSig, operator_did: other.did }), 403, 'challenge_mismatch');
    assertError(await h.call('POST', prepUrl, { ...base, new_operator_signature: newSig, signer_key_id: kid(op.did, 'key-1') }), 403, 'signer_not_authorized');
    assertError(await h.call('POST', prepUrl, { ...base, new_operator_signature: 'short' }), 400, 'invalid_signature_encoding');
    const prep = await h.call('POST', prepUrl, { ...base, new_operator_signature: newSig });
    assert.equal(prep.status, 200, JSON.stringify(prep.body));
    assert.equal(prep.body.nonce_domain, 'operator_nonce');
    const body = signedRequest(prep.body, op.key);
    const url = `/personas/${enc(p)}/transfer`;
    assertError(await h.call('PUT', url, { ...body, new_controller_keys: ['other'] }), 403, 'canonical_payload_mismatch');
    assertError(await h.call('PUT', url, { ...body, new_operator_signer_key_id: 'x' }), 403, 'canonical_payload_mismatch');
    for (const wrong of [7, null, ['root'], {}]) {
      assertError(await h.call('PUT', url, { ...body, new_operator_signer_key_id: wrong }), 400, 'invalid_request');
    }
    assertError(await h.call('PUT', url, { ...body, canonical_payload: prep.body.canonical_payload + '00' }), 400, 'invalid_canonical_payload');
    const res = await h.call('PUT', url, body);
    assertAccepted(res);
    assert.equal(res.body.operation, 'Transfer');
    h.settle();
    assertError(await h.call('PUT', url, body), 409, 'challenge_already_used');
    assert.equal((await readPersona(h, p)).operator_did, other.did);
  });

  it('reads: GET /personas shows pending operations; operator nonce route', async () => {
    const { h } = n;
    const p = fresh();
    await registerDnsPersona(n, p, op);
    const prep = await prepareControl(h, p, { action: 'revoke_persona' });
    const res = await h.call('DELETE', `/personas/${enc(p)}`, signedRequest(prep.body, op.key));
    const tx = assertAccepted(res);
    const rec = await readPersona(h, p);
    assert.equal(rec.active, true, 'finalized state until the block');
    assert.deepEqual(
      (rec.pending_operations as Body[]).map((o) => [o.operation, o.tx_hash, o.nonce]),
      [['Revoke', tx, prep.body.nonce]],
    );
    assert.equal(typeof rec.block_number, 'number');
    assert.match(rec.block_hash as string, /^0x[0-9a-f]{64}$/);
    h.settle();
    assertError(await h.call('GET', '/persona-operators/did%3Aplatform%3AzzzzzzzzzzzzzzzzzzzzZ/nonce'), 404, 'did_not_found');
    assertError(await h.call('GET', '/persona-operators/not-a-did/nonce'), 400, 'invalid_did');
    assertError(await h.call('GET', '/personas/-bad-/nonces'), 400, 'invalid_persona');
  });

  it('an expired persona reads as expired and undeliverable; renewal restores it', async () => {
    const { h } = n;
    const p = fresh();
    await registerDnsPersona(n, p, op, { controller_keys: ['root'], verification_days: 1 });
    h.clock.advance(DAY + 1);
    let rec = await readPersona(h, p);
    assert.equal(rec.active, true);
    assert.equal(rec.expired, true);
    assert.equal(rec.deliverable, false);
    // Transfer needs a deliverable persona.
    assertError(
      await h.call('POST', `/personas/${enc(p)}/dns-challenges`, { operator_did: other.did, action: 'transfer_persona' }),
      409,
      'persona_verification_expired',
    );
    await renewDnsPersona(n, p, op);
    rec = await readPersona(h, p);
    assert.equal(rec.expired, false);
    assert.equal(rec.deliverable, true);
  });
});
