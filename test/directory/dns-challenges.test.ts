/**
 * Persona DNS challenges (http-api.md §7.2, §7.3): creation checks, reading, verification against a real UDP DNS
 * server (TXT lookup, proof hash, attestation by the Directory's attestor key), expiry after 48 h, and every
 * error code of the three routes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseHex, to0x } from '../../src/base/bytes.js';
import { checkTxtRecord, createTxtLookup } from '../../src/directory/dns-verifier.js';
import { isValidPersonaAttestation } from '../../src/ledger/runtime/personas.js';
import { decodePersonaPayload, dnsProofHash } from '../../src/protocol/payloads/persona.js';
import { assertError, kid, registerDid } from '../support/directory-flows.js';
import { RCODE, startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import {
  createChallenge,
  enc,
  operatorOf,
  publish,
  registerDnsPersona,
  registerNamed,
  requestChallenge,
  startPersonaDirectory,
  verified,
  verifyChallenge,
  type Operator,
  type PersonaNetwork,
} from '../support/persona-flows.js';
import { injectChecked } from '../support/inject-contract.js';

type Body = Record<string, unknown>;
const H48 = 48 * 3_600_000;

describe('DNS TXT check against the loopback DNS server', () => {
  let dns: TestDnsServer;
  before(async () => {
    dns = await startDnsServer();
  });
  after(() => dns.close());

  it('concatenates character-strings, reports missing, mismatching and failed lookups', async () => {
    const lookup = createTxtLookup({ servers: [dns.server], timeoutMs: 2000 });
    dns.setTxt('_platform-persona.a.example', ['platform-persona-', 'verification=abc'], 'unrelated');
    assert.deepEqual(await checkTxtRecord(lookup, '_platform-persona.a.example', 'platform-persona-verification=abc'), { ok: true });
    assert.deepEqual(await checkTxtRecord(lookup, '_PLATFORM-persona.A.example', 'platform-persona-verification=abc'), { ok: true });
    assert.deepEqual(await checkTxtRecord(lookup, '_platform-persona.a.example', 'platform-persona-verification=abd'), {
      ok: false,
      reason: 'record_mismatch',
    });
    const missing = await checkTxtRecord(lookup, '_platform-persona.none.example', 'x');
    assert.equal(missing.ok, false);
    assert.equal(!missing.ok && missing.reason, 'record_missing');
    dns.failWith('_platform-persona.broken.example', RCODE.SERVFAIL);
    const failed = await checkTxtRecord(lookup, '_platform-persona.broken.example', 'x');
    assert.equal(!failed.ok && failed.reason, 'lookup_failed');
    assert.ok(dns.queries.includes('_platform-persona.broken.example'));
  });
});

describe('DNS challenges over HTTP', () => {
  let n: PersonaNetwork;
  let op: Operator;
  let other: Operator;
  let seq = 0;
  const fresh = () => `c${++seq}.example.net`;
  before(async () => {
    n = await startPersonaDirectory();
    op = await operatorOf(n.h, 41);
    other = await operatorOf(n.h, 42);
  });
  after(() => n.close());

  it('creates a challenge bound to (persona, operator, action): 201 shape', async () => {
    const { h } = n;
    const res = await h.call('POST', `/personas/${enc('New.Example.NET')}/dns-challenges`, { operator_did: op.did, action: 'register_persona' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const c = res.body;
    assert.match(c.challenge_id as string, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(c.persona, 'new.example.net');
    assert.equal(c.operator_did, op.did);
    assert.equal(c.action, 'register_persona');
    assert.equal(c.challenge_nonce, '0');
    assert.equal(c.persona_nonce, '0');
    assert.equal(c.operator_nonce, '0');
    assert.equal(c.current_operator_did, undefined);
    assert.equal(c.record_name, '_platform-persona.new.example.net');
    assert.equal(c.record_type, 'TXT');
    assert.match(c.record_value as string, /^platform-persona-verification=[A-Za-z0-9_-]{43}$/);
    assert.equal(c.expires_at, new Date(h.clock.nowMs() + H48).toISOString());
    assert.equal(c.directory_url, 'http://localhost:80');
    const proxied = await injectChecked(h.server, {
      method: 'POST',
      url: `/personas/${enc('new.example.net')}/dns-challenges`,
      headers: { 'content-type': 'application/json', host: 'dir.example.net', 'x-forwarded-proto': 'https' },
      payload: JSON.stringify({ operator_did: op.did, action: 'register_persona' }),
    });
    assert.equal(proxied.json().directory_url, 'https://dir.example.net', 'never downgrades https behind a proxy');

    const got = await h.call('GET', `/personas/${enc('new.example.net')}/dns-challenges/${c.challenge_id as string}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.status, 'pending');
    assert.equal(got.body.record_value, c.record_value);
    assertError(await h.call('GET', `/personas/${enc('new.example.net')}/dns-challenges/nope`), 404, 'challenge_not_found');
    assertError(await h.call('GET', `/personas/${enc('other.example.net')}/dns-challenges/${c.challenge_id as string}`), 404, 'challenge_not_found');
  });

  it('creation errors', async () => {
    const { h } = n;
    const p = fresh();
    await registerDnsPersona(n, p, op);
    const named = 'solo41';
    await registerNamed(h, named, op);
    const unknownDid = 'did:platform:11111111111111111111111';
    const deact = await registerDid(h, 43);
    const { mutate } = await import('../support/directory-flows.js');
    await mutate(h, deact.did, deact.key, 'deactivate_did');
    const cases: [string, Body, number, string][] = [
      ['single', { operator_did: op.did, action: 'register_persona' }, 400, 'persona_not_dns'],
      ['-x.example', { operator_did: op.did, action: 'register_persona' }, 400, 'invalid_persona'],
      [fresh(), { operator_did: 'nope', action: 'register_persona' }, 400, 'invalid_did'],
      [fresh(), { action: 'register_persona' }, 400, 'invalid_request'],
      [fresh(), { operator_did: op.did, action: 'revoke_persona' }, 400, 'unsupported_action'],
      [fresh(), { operator_did: unknownDid, action: 'register_persona' }, 404, 'did_not_found'],
      [fresh(), { operator_did: deact.did, action: 'register_persona' }, 409, 'did_deactivated'],
      [p, { operator_did: op.did, action: 'register_persona' }, 409, 'persona_already_exists'],
      [fresh(), { operator_did: op.did, action: 'renew_persona' }, 404, 'persona_not_found'],
      [p, { operator_did: other.did, action: 'renew_persona' }, 403, 'invalid_persona_controller'],
      [named, { operator_did: op.did, action: 'renew_persona' }, 400, 'persona_not_dns'],
      [fresh(), { operator_did: other.did, action: 'transfer_persona' }, 404, 'persona_not_found'],
      [p, { operator_did: op.did, action: 'transfer_persona' }, 400, 'invalid_request'],
      [p, { operator_did: op.did, action: 'register_persona', persona: 'x.example.net' }, 400, 'path_body_mismatch'],
    ];
    for (const [persona, body, status, code] of cases) {
      assertError(await requestChallenge(h, persona, body), status, `${code}`);
    }
    // A pending registration counts as existing.
    const q = fresh();
    const c = await createChallenge(h, q, op.did, 'register_persona');
    const v = await verified(n, c);
    const { signedRequest, putPersona } = await import('../support/persona-flows.js');
    assert.equal((await putPersona(h, q, signedRequest(v, op.key))).status, 202);
    assertError(await requestChallenge(h, q, { operator_did: other.did, action: 'register_persona' }), 409, 'persona_already_exists');
    h.settle();
  });

  it('verification: DNS proof hash, attestation by the attestor key, payload and request', async () => {
    const { h } = n;
    const p = fresh();
    const c = await createChallenge(h, p, op.did, 'register_persona');
    publish(n.dns, c);
    const now = h.clock.nowMs();
    const res = await verifyChallenge(h, c, { controller_keys: ['root'], verification_days: 10, challenge_id: c.challenge_id });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const v = res.body;
    assert.equal(v.verified, true);
    assert.equal(v.operation, 'Register');
    assert.equal(v.extrinsic, 'apply_persona_with_proof');
    assert.equal(v.dns_proof_hash, to0x(dnsProofHash(c.record_name as string, c.record_value as string)));
    assert.equal(v.verification_expires_at, now + 10 * 86_400_000);
    assert.equal(v.attestor, to0x(h.attestor.publicKey));
    assert.match(v.attestation_signature as string, /^0x00[0-9a-f]{128}$/);
    assert.ok(
      isValidPersonaAttestation(h.profile, h.ledger.genesisHash, p, op.did, {
        dnsProofHash: parseHex(v.dns_proof_hash as string)!,
        challengeNonce: 0n,
        verificationExpiresAt: BigInt(v.verification_expires_at as number),
        attestor: h.attestor.publicKey,
        attestationSignature: parseHex(v.attestation_signature as string)!,
      }),
    );
    assert.equal(v.canonical_payload, v.payload_to_sign);
    const decoded = decodePersonaPayload(parseHex(v.canonical_payload as string)!)!;
    assert.equal(decoded.operatorDid, op.did);
    assert.equal(decoded.nonce, BigInt(c.operator_nonce as string));
    assert.equal(decoded.operation.kind, 'Register');
    assert.equal(decoded.signerKeyId, 'root');
    const req = v.request as Body;
    assert.deepEqual(Object.keys(req).sort(), [
      'action',
      'attestation_signature',
      'attestor',
      'canonical_payload',
      'challenge_id',
      'controller_keys',
      'controller_threshold',
      'nonce',
      'operator_did',
      'persona',
      'signer_key_id',
      'valid_until',
      'verification_expires_at',
    ]);
    assert.equal(req.valid_until, String(now + 300_000));
    // The challenge now reads as verified with the outputs.
    const got = await h.call('GET', `/personas/${enc(p)}/dns-challenges/${c.challenge_id as string}`);
    assert.equal(got.body.status, 'verified');
    assert.equal(got.body.canonical_payload, v.canonical_payload);
    // Verifying again replaces the intent.
    const again = await verifyChallenge(h, c, { controller_keys: ['root'], verification_days: 20 });
    assert.equal(again.status, 200);
    const got2 = await h.call('GET', `/personas/${enc(p)}/dns-challenges/${c.challenge_id as string}`);
    assert.equal(got2.body.verification_expires_at, again.body.verification_expires_at);
    assert.notEqual(got2.body.canonical_payload, v.canonical_payload);
  });

  it('verification errors, in order', async () => {
    const { h } = n;
    const p = fresh();
    const c = await createChallenge(h, p, op.did, 'register_persona');
    const url = (id: string) => `/personas/${enc(p)}/dns-challenges/${id}/verify`;
    const ok: Body = { operator_did: op.did, action: 'register_persona', nonce: c.operator_nonce, controller_keys: ['root'] };
    assertError(await h.call('POST', url('00000000-0000-4000-8000-000000000000'), ok), 404, 'challenge_not_found');
    // the route's parser reads every field, but their refusals keep §7.3's place: after the challenge, after the nonces
    const malformed = { ...ok, operator_did: 'x', action: 1, nonce: 'abc', verification_days: 0 };
    assertError(await h.call('POST', url('00000000-0000-4000-8000-000000000000'), malformed), 404, 'challenge_not_found');
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, nonce: '99', verification_days: 0 }), 409, 'nonce_mismatch');
    assertError(await h.call('POST', `/personas/${enc('other.example.net')}/dns-challenges/${c.challenge_id as string}/verify`, ok), 403, 'challenge_mismatch');
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, operator_did: other.did }), 403, 'challenge_mismatch');
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, action: 'renew_persona' }), 403, 'challenge_mismatch');
    // Another JSON type is a malformed request, not another action.
    for (const action of [1, true, ['register_persona'], { a: 1 }]) {
      assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, action }), 400, 'invalid_request');
    }
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, challenge_id: 'x' }), 400, 'path_body_mismatch');
    // the body's copy of the persona is compared after canonicalisation (§0.4)
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, persona: 'other.example.net' }), 400, 'path_body_mismatch');
    const stale = await h.call('POST', url(c.challenge_id as string), { ...ok, nonce: '99' });
    assertError(stale, 409, 'nonce_mismatch');
    assert.equal((stale.body.details as Body).nonce_domain, 'operator_nonce');
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, nonce: 'abc' }), 400, 'invalid_nonce');
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, verification_days: 366 }), 400, 'invalid_request');
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, verification_days: 0 }), 400, 'invalid_request');
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, controller_keys: 'root' }), 400, 'invalid_request');
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, controller_keys: [] }), 403, 'invalid_persona_controller');
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, controller_threshold: 2 }), 403, 'invalid_persona_controller');
    assertError(
      await h.call('POST', url(c.challenge_id as string), { ...ok, delivery_constraints: { requested_cache_seconds: 1 } }),
      400,
      'invalid_delivery_constraints',
    );
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, valid_until: 'later' }), 400, 'invalid_valid_until');
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, signer_key_id: kid(op.did, 'missing') }), 403, 'signer_not_authorized');
    // The signer must be in the proposed set.
    assertError(await h.call('POST', url(c.challenge_id as string), { ...ok, signer_key_id: kid(op.did, 'key-1') }), 403, 'signer_not_authorized');
    // DNS: missing, mismatching, failing — 422 dns_verification_failed with the reason.
    const dnsFail = async (reason: string) => {
      const res = await h.call('POST', url(c.challenge_id as string), ok);
      assertError(res, 422, 'dns_verification_failed');
      assert.equal((res.body.details as Body).reason, reason);
    };
    await dnsFail('record_missing');
    n.dns.setTxt(c.record_name as string, 'platform-persona-verification=wrong');
    await dnsFail('record_mismatch');
    n.dns.failWith(c.record_name as string, RCODE.SERVFAIL);
    await dnsFail('lookup_failed');
    publish(n.dns, c);
    assert.equal((await h.call('POST', url(c.challenge_id as string), ok)).status, 200);

    // The persona nonce moved (another registration of the name used its challenge): request a new challenge.
    const c2 = await createChallenge(h, p, other.did, 'register_persona');
    await registerDnsPersona(n, p, op);
    publish(n.dns, c2);
    const moved = await verifyChallenge(h, c2, { controller_keys: ['root'] });
    assertError(moved, 409, 'nonce_mismatch');
    assert.equal((moved.body.details as Body).nonce_domain, 'persona_nonce');
  });

  it('expires after 48 hours: 410 on verify and on submission; GET shows expired', async () => {
    const { h } = n;
    const p = fresh();
    const c = await createChallenge(h, p, op.did, 'register_persona');
    const v = await verified(n, c);
    h.clock.advance(H48 - 1);
    const got = await h.call('GET', `/personas/${enc(p)}/dns-challenges/${c.challenge_id as string}`);
    assert.equal(got.body.status, 'verified');
    h.clock.advance(1);
    const expired = await h.call('GET', `/personas/${enc(p)}/dns-challenges/${c.challenge_id as string}`);
    assert.equal(expired.body.status, 'expired');
    assertError(await verifyChallenge(h, c), 410, 'challenge_expired');
    const { signedRequest, putPersona } = await import('../support/persona-flows.js');
    assertError(await putPersona(h, p, signedRequest(v, op.key)), 410, 'challenge_expired');
  });

  it('without an attestor key, verification answers 503', async () => {
    const bare = await startPersonaDirectory({ attestor: undefined });
    try {
      const o = await operatorOf(bare.h, 44);
      const c = await createChallenge(bare.h, 'x.example.net', o.did, 'register_persona');
      publish(bare.dns, c);
      const res = await verifyChallenge(bare.h, c, { controller_keys: ['root'] });
      assertError(res, 503, 'service_unavailable');
    } finally {
      await bare.close();
    }
  });
});
