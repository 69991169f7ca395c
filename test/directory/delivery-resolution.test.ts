/**
 * `GET /delivery-resolution/{did}` (http-api.md §6) over real policies written through HTTP: the persona rule
 * beats the DID rule, a non-matching tag falls back to the DID, equal priority keeps the first rule, overrides are
 * clamped by the recipient's constraints, an expired persona is 422, and the response / error shapes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { base58 } from '@scure/base';
import { to0x } from '../../src/base/bytes.js';
import { policyIdV2 } from '../../src/protocol/policy/policy-id.js';
import { assertError, didOf, kid, keyOf, mutate, registerDid, vmOf } from '../support/directory-flows.js';
import {
  controlPersona,
  enc,
  operatorOf,
  registerDnsPersona,
  registerNamed,
  startPersonaDirectory,
  type Operator,
  type PersonaNetwork,
} from '../support/persona-flows.js';
import {
  constraintsOf,
  forwardPlan,
  policyJson,
  policyJsonV2,
  registerServiceDid,
  rule,
  target,
  writeV2,
  writeV3,
  type ServiceDid,
} from '../support/policy-flows.js';
import { injectChecked } from '../support/inject-contract.js';

type Body = Record<string, unknown>;
const DEPRECATED = ['max_message_bytes', 'max_chunks'];

describe('GET /delivery-resolution/{did}', () => {
  let n: PersonaNetwork;
  let svc: ServiceDid;
  let recipient: ServiceDid;
  let brandOp: Operator;
  const resolveUrl = (did: string, query = '') => `/delivery-resolution/${enc(did)}${query}`;
  const resolve = async (did: string, query = '') => {
    const res = await injectChecked(n.h.server, { method: 'GET', url: resolveUrl(did, query) });
    return { status: res.statusCode, body: res.json() as Body, cacheControl: res.headers['cache-control'] };
  };
  const fwdTo = (frag: string) => forwardPlan([target(svc, frag)]);

  before(async () => {
    n = await startPersonaDirectory();
    const h = n.h;
    svc = await registerServiceDid(h, 200, [
      { fragment: 'relay-a', kind: 'Relay' },
      { fragment: 'relay-b', kind: 'Relay' },
      { fragment: 'relay-c', kind: 'Relay' },
      { fragment: 'cache', kind: 'Cache' },
    ]);
    recipient = await registerServiceDid(h, 201, []);
    // The recipient's own policy: `did-first` and `did-second` tie at priority 1 (the first wins); `did-vip`
    // (priority 5) wins for tag `vip`.
    await writeV2(h, recipient.key, {
      action: 'set_did_policy_v2',
      did: recipient.did,
      policy: policyJsonV2('DID', recipient.did, recipient.did, [
        rule('did-first', 1, fwdTo('relay-a')),
        rule('did-second', 1, fwdTo('relay-b')),
        rule('did-vip', 5, fwdTo('relay-c'), [{ type: 'TagEquals', value: 'vip' }]),
      ]),
    });
    // A named persona with a policy for tag `invoice` and an override rule for tag `big`.
    brandOp = await operatorOf(h, 202);
    await registerNamed(h, 'brand', brandOp);
    await writeV2(h, brandOp.key, {
      action: 'set_persona_policy_v2',
      persona: 'brand',
      policy: policyJsonV2('PERSONA', 'brand', brandOp.did, [
        rule('persona-invoice', 1, fwdTo('relay-b'), [{ type: 'TagEquals', value: 'invoice' }]),
        rule(
          'persona-big',
          1,
          {
            type: 'DeliveryPlan/v1',
            entry_step: 's',
            steps: [{ id: 's', operation: 'Store', targets: [target(svc, 'cache')], desired_replicas: 1, required_replicas: 1 }],
            transitions: [],
          },
          [{ type: 'TagEquals', value: 'big' }],
          { max_replicas: 3, requested_cache_seconds: 7200 },
        ),
      ]),
    });
  });
  after(() => n.close());

  it('the DID rule without persona: response shape, the policy’s own id, Cache-Control, no deprecated fields', async () => {
    const r = await resolve(recipient.did);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.target, recipient.did);
    assert.equal(r.body.encryption_profile, 'direct');
    assert.equal(r.body.recipient_key_id, kid(recipient.did, 'ka-1'));
    assert.match(r.body.recipient_public_key_multibase as string, /^z/);
    const p = r.body.policy as Body;
    assert.equal(p.source, 'did');
    assert.equal(p.source_id, recipient.did);
    assert.equal(
      p.policy_id,
      to0x(policyIdV2(n.h.profile, { kind: 'Did', id: recipient.did })),
      'v2 policies are served with the v2 id they were written with',
    );
    assert.equal(p.policy_revision, 1);
    assert.equal(p.rule_id, 'did-first', 'equal priority keeps the first rule');
    assert.equal(p.rule_priority, 1);
    assert.deepEqual(p.action, {
      type: 'DeliveryPlan/v1',
      entry_step: 'fwd',
      steps: [{ id: 'fwd', operation: 'Forward', targets: [{ service_did: svc.did, service_id: svc.id('relay-a'), priority: 0, weight: 1 }] }],
      transitions: [],
    });
    assert.equal(p.policy_ttl_seconds, 60, 'a v2 policy holds 60');
    assert.deepEqual(r.body.effective_constraints, p.effective_constraints);
    assert.deepEqual(r.body.effective_constraints, {
      requested_cache_seconds: 172_800,
      effective_ttl_seconds: 172_800,
      max_http_envelope_bytes: 26_214_400,
      max_unchunked_message_bytes: 16_777_216,
      max_chunk_bytes: 2_097_152,
      max_replicas: 4,
    });
    for (const k of DEPRECATED) assert.equal(k in (r.body.effective_constraints as Body), false);
    assert.equal(r.cacheControl, 'max-age=60');
    assert.equal(typeof r.body.block_number, 'number');
    assert.match(r.body.block_hash as string, /^0x[0-9a-f]{64}$/);
    // A higher-priority later rule wins for its tag.
    assert.equal(((await resolve(recipient.did, '?tag=vip')).body.policy as Body).rule_id, 'did-vip');
  });

  it('the persona rule beats the DID rule; a non-matching tag falls back to the DID', async () => {
    const hit = await resolve(recipient.did, '?persona=Brand&tag=invoice');
    assert.equal(hit.status, 200, JSON.stringify(hit.body));
    const p = hit.body.policy as Body;
    assert.equal(p.source, 'persona');
    assert.equal(p.source_id, 'brand');
    assert.equal(p.rule_id, 'persona-invoice');
    const fallback = await resolve(recipient.did, '?persona=brand&tag=other');
    assert.equal((fallback.body.policy as Body).source, 'did');
    assert.equal((fallback.body.policy as Body).rule_id, 'did-first');
    const vip = await resolve(recipient.did, '?persona=brand&tag=vip');
    assert.equal((vip.body.policy as Body).rule_id, 'did-vip');
  });

  it('rule overrides are clamped by the recipient’s constraints', async () => {
    const before = await resolve(recipient.did, '?persona=brand&tag=big');
    assert.equal(((before.body.policy as Body).effective_constraints as Body).max_replicas, 3);
    assert.equal(((before.body.policy as Body).effective_constraints as Body).requested_cache_seconds, 7200);
    await writeV2(n.h, recipient.key, {
      action: 'set_did_constraints',
      did: recipient.did,
      delivery_constraints: constraintsOf({ max_replicas: 2, requested_cache_seconds: 600 }),
    });
    const after = await resolve(recipient.did, '?persona=brand&tag=big');
    const eff = (after.body.policy as Body).effective_constraints as Body;
    assert.equal(eff.max_replicas, 2);
    assert.equal(eff.requested_cache_seconds, 600);
    assert.equal(eff.effective_ttl_seconds, 600);
    assert.deepEqual(after.body.effective_constraints, eff);
    // The DID rule uses the addressed (recipient) constraints.
    const did = await resolve(recipient.did);
    assert.equal((did.body.effective_constraints as Body).max_replicas, 2);
  });

  it('no rule: policy null, addressed constraints, max-age=60', async () => {
    const plain = await registerServiceDid(n.h, 203, []);
    const r = await resolve(plain.did, '?tag=anything');
    assert.equal(r.status, 200);
    assert.equal(r.body.policy, null);
    assert.equal(r.cacheControl, 'max-age=60');
    assert.equal((r.body.effective_constraints as Body).max_replicas, 4);
    for (const k of DEPRECATED) assert.equal(k in (r.body.effective_constraints as Body), false);
  });

  it('RequireProfile as the entry step selects the persona-release profile', async () => {
    const op = await operatorOf(n.h, 204);
    await registerNamed(n.h, 'private', op);
    await writeV3(n.h, op.key, 'persona', 'private', {
      action: 'set_policy_v3',
      policy: policyJson('PERSONA', 'private', op.did, [
        rule('release', 1, {
          type: 'DeliveryPlan/v1',
          entry_step: 'rp',
          steps: [
            { id: 'rp', operation: 'RequireProfile' },
            { id: 'fwd', operation: 'Forward', targets: [target(svc, 'relay-a')] },
          ],
          transitions: [{ from: 'rp', to: 'fwd', trigger: 'Success' }],
        }),
      ]),
    });
    const r = await resolve(recipient.did, '?persona=private');
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.encryption_profile, 'platform:persona-release:v1');
    assert.equal((r.body.policy as Body).policy_ttl_seconds, 120, "the winning v3 policy's own TTL");
    assert.equal(r.cacheControl, 'max-age=120');
  });

  it('the first usable X25519 key agreement in document order; none → 404 key_agreement_not_found', async () => {
    const did = didOf(205);
    const key = keyOf(205);
    const raw = new Uint8Array(32).fill(5);
    await registerDid(n.h, 205, {
      did,
      key,
      document: {
        id: did,
        verificationMethod: [vmOf(did, 'key-1', key)],
        keyAgreement: [
          { id: kid(did, 'jwk'), type: 'JsonWebKey2020', controller: did, publicKeyMultibase: `z${base58.encode(raw)}` },
          { id: kid(did, 'bad'), type: 'Multikey', controller: did, publicKeyMultibase: 'zshort' },
          { id: kid(did, 'ka-2019'), type: 'X25519KeyAgreementKey2019', controller: did, publicKeyMultibase: `z${base58.encode(raw)}` },
        ],
      },
    });
    const r = await resolve(did);
    assert.equal(r.body.recipient_key_id, kid(did, 'ka-2019'));
    const none = await registerServiceDid(n.h, 206, [], { keyAgreement: false });
    assertError(await n.h.call('GET', resolveUrl(none.did)), 404, 'key_agreement_not_found');
  });

  it('errors: unknown, deactivated, bad tag, bad persona, undeliverable personas', async () => {
    const h = n.h;
    assertError(await h.call('GET', resolveUrl(didOf(250))), 404, 'did_not_found');
    assertError(await h.call('GET', '/delivery-resolution/someone'), 400, 'invalid_did');
    assertError(await h.call('GET', resolveUrl(recipient.did, '?tag=%01x')), 400, 'invalid_request');
    assertError(await h.call('GET', resolveUrl(recipient.did, '?tag=')), 400, 'invalid_request');
    assertError(await h.call('GET', resolveUrl(recipient.did, `?tag=${'x'.repeat(97)}`)), 400, 'invalid_request');
    assertError(await h.call('GET', resolveUrl(recipient.did, '?persona=a..b')), 400, 'invalid_persona');
    const undeliverable = async (query: string, reason: string) => {
      const res = await h.call('GET', resolveUrl(recipient.did, query));
      assertError(res, 422, 'persona_not_deliverable');
      assert.equal((res.body.details as Body).reason, reason);
    };
    await undeliverable('?persona=nobody', 'persona_not_found');
    const op = await operatorOf(h, 207);
    await registerNamed(h, 'gone', op);
    await controlPersona(h, 'gone', op, { action: 'revoke_persona' });
    await undeliverable('?persona=gone', 'persona_inactive');
    // An expired DNS persona.
    await registerDnsPersona(n, 'short.example.org', op, { controller_keys: ['root'], verification_days: 1 });
    assert.equal((await h.call('GET', resolveUrl(recipient.did, '?persona=short.example.org'))).status, 200);
    h.clock.advance(86_400_000);
    await undeliverable('?persona=short.example.org', 'persona_verification_expired');
    // Deactivated recipient: 409.
    const dead = await registerServiceDid(h, 208, []);
    await mutate(h, dead.did, dead.key, 'deactivate_did');
    assertError(await h.call('GET', resolveUrl(dead.did)), 409, 'did_deactivated');
  });
});
