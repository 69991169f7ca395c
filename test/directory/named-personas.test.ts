/**
 * Named (single-label) personas over HTTP (http-api.md §7.5): prepare → sign → submit, the read of a named
 * persona, `canonical_payload_mismatch` for a changed payload, and every error of the two routes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseHex } from '../../src/base/bytes.js';
import { decodePersonaPayload } from '../../src/protocol/payloads/persona.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { assertAccepted, assertError, kid, mutate, registerDid, signHex } from '../support/directory-flows.js';
import { enc, operatorOf, prepareNamed, readPersona, registerNamed, signedRequest, type Operator } from '../support/persona-flows.js';

type Body = Record<string, unknown>;

describe('named personas', () => {
  let h: DirectoryHarness;
  let op: Operator;
  let seq = 0;
  const fresh = () => `named${++seq}`;
  before(async () => {
    h = await startDirectory();
    op = await operatorOf(h, 51);
  });
  after(() => h.close());

  it('prepare → sign → PUT …/named; the record reads as a named persona that never expires', async () => {
    const p = fresh();
    const constraints = {
      requested_cache_seconds: 60,
      max_http_envelope_bytes: 4096,
      max_unchunked_message_bytes: 2048,
      max_chunk_bytes: 1024,
      max_replicas: 1,
    };
    const prep = await prepareNamed(h, p.toUpperCase(), { operator_did: op.did, persona: p, controller_keys: ['root'], delivery_constraints: constraints });
    assert.equal(prep.status, 200, JSON.stringify(prep.body));
    const b = prep.body;
    assert.equal(b.persona, p);
    assert.equal(b.operation, 'RegisterNamed');
    assert.equal(b.extrinsic, 'apply_persona_with_proof');
    assert.equal(b.nonce_domain, 'operator_nonce');
    assert.equal(b.nonce, '0');
    assert.equal(b.valid_until, String(h.clock.nowMs() + 300_000));
    assert.equal(b.canonical_payload, b.payload_to_sign);
    const decoded = decodePersonaPayload(parseHex(b.canonical_payload as string)!)!;
    assert.deepEqual(decoded.operation, {
      kind: 'RegisterNamed',
      persona: p,
      controllerKeyIds: ['root'],
      controllerThreshold: 1,
      constraints: {
        requestedCacheSeconds: 60,
        maxHttpEnvelopeBytes: 4096,
        maxUnchunkedMessageBytes: 2048,
        maxChunkBytes: 1024,
        maxMessageBytes: 4_294_967_295,
        maxChunks: 65_535,
        maxReplicas: 1,
      },
    });
    const res = await h.call('PUT', `/personas/${enc(p)}/named`, signedRequest(b, op.key));
    assertAccepted(res);
    assert.equal(res.body.operation, 'RegisterNamed');
    assert.equal(res.body.persona, p);
    h.settle();
    const rec = await readPersona(h, p);
    assert.equal(rec.kind, 'named');
    assert.equal(rec.dns_required, false);
    assert.equal(rec.dns_proof_hash, null);
    assert.equal(rec.verified_at, 0);
    assert.equal(rec.verification_expires_at, 0);
    assert.equal(rec.expired, false);
    assert.equal(rec.deliverable, true);
    h.clock.advance(400 * 86_400_000);
    assert.equal((await readPersona(h, p)).deliverable, true, 'named personas never expire');
    assertError(await prepareNamed(h, p, { operator_did: op.did }), 409, 'persona_already_exists');
  });

  it('a payload that differs from the rebuilt intent is 403 canonical_payload_mismatch', async () => {
    const p = fresh();
    const prep = await prepareNamed(h, p, { operator_did: op.did, controller_keys: ['root'] });
    assert.equal(prep.status, 200, JSON.stringify(prep.body));
    const body = signedRequest(prep.body, op.key);
    const url = `/personas/${enc(p)}/named`;
    for (const changed of [
      { controller_keys: ['root', kid(op.did, 'key-1')] },
      { delivery_constraints: { requested_cache_seconds: 1, max_http_envelope_bytes: 1, max_unchunked_message_bytes: 1, max_chunk_bytes: 1, max_replicas: 1 } },
      { valid_until: String(BigInt(body.valid_until as string) + 1n) },
      { nonce: '7' },
    ]) {
      assertError(await h.call('PUT', url, { ...body, ...changed }), 403, 'canonical_payload_mismatch');
    }
    // The payload of another persona: decodes, but differs.
    const other = await prepareNamed(h, fresh(), { operator_did: op.did, controller_keys: ['root'] });
    assertError(await h.call('PUT', url, { ...body, canonical_payload: other.body.canonical_payload }), 403, 'canonical_payload_mismatch');
    assertError(await h.call('PUT', url, { ...body, canonical_payload: '0xdeadbeef' }), 400, 'invalid_canonical_payload');
    assertError(await h.call('PUT', url, { ...body, signature: signHex(h.attestor, prep.body.payload_to_sign as string) }), 403, 'invalid_signature');
    assertError(await h.call('PUT', url, { ...body, action: 'register_persona' }), 400, 'action_mismatch');
    assertError(await h.call('PUT', url, { ...body, persona: 'zzz' }), 400, 'path_body_mismatch');
    assertError(await h.call('PUT', `/personas/${enc('dotted.example.com')}/named`, body), 400, 'persona_not_dns');
    assertAccepted(await h.call('PUT', url, body));
    h.settle();
    // Resubmitted after inclusion: the persona exists now.
    assertError(await h.call('PUT', url, body), 409, 'persona_already_exists');
  });

  it('prepare errors', async () => {
    const deact = await registerDid(h, 52);
    await mutate(h, deact.did, deact.key, 'deactivate_did');
    const cases: [string, Body, number, string][] = [
      ['dotted.example.com', { operator_did: op.did }, 400, 'persona_not_dns'],
      ['bad_name', { operator_did: op.did }, 400, 'invalid_persona'],
      [fresh(), { operator_did: op.did, action: 'register_persona' }, 400, 'action_mismatch'],
      [fresh(), { operator_did: 'x' }, 400, 'invalid_did'],
      [fresh(), { operator_did: 'did:platform:11111111111111111111111' }, 404, 'did_not_found'],
      [fresh(), { operator_did: deact.did }, 409, 'did_deactivated'],
      [fresh(), { operator_did: op.did, controller_keys: [] }, 403, 'invalid_persona_controller'],
      [fresh(), { operator_did: op.did, controller_keys: ['root', 'root'] }, 403, 'invalid_persona_controller'],
      [fresh(), { operator_did: op.did, controller_keys: Array.from({ length: 9 }, (_, i) => `k${i}`) }, 403, 'invalid_persona_controller'],
      [fresh(), { operator_did: op.did, controller_keys: ['root'], controller_threshold: 2 }, 403, 'invalid_persona_controller'],
      [fresh(), { operator_did: op.did, controller_keys: [kid(op.did, 'key-1')] }, 403, 'signer_not_authorized'],
      [fresh(), { operator_did: op.did, controller_keys: ['x'], signer_key_id: 'x' }, 403, 'signer_not_authorized'],
      [fresh(), { operator_did: op.did, controller_keys: 'root' }, 400, 'invalid_request'],
      [fresh(), { operator_did: op.did, valid_until: 'tomorrow' }, 400, 'invalid_valid_until'],
      [fresh(), { operator_did: op.did, delivery_constraints: { max_replicas: 1 } }, 400, 'invalid_delivery_constraints'],
    ];
    for (const [persona, body, status, code] of cases) {
      assertError(await h.call('POST', `/personas/${enc(persona)}/named/prepare`, { action: 'register_named_persona', ...body }), status, code);
    }
    // A default controller set is the signer; a signer given as a VM id of the operator works too.
    const p = fresh();
    const prep = await prepareNamed(h, p, { operator_did: op.did, signer_key_id: kid(op.did, 'key-1') });
    assert.equal(prep.status, 200, JSON.stringify(prep.body));
    assert.deepEqual((prep.body.request as Body).controller_keys, [kid(op.did, 'key-1')]);
    await registerNamed(h, fresh(), op);
  });
});
