/**
 * Applications over HTTP (http-api.md §9): registration (prepare → sign → submit, `application_proof_stale` for a
 * stale nonce or payload), the read, every authorization action — domain, status, control change, linked DIDs
 * with two signatures — their error codes and their limits.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseHex, toBase64 } from '../../src/base/bytes.js';
import { MAX_APPLICATIONS_PER_CONTROL_DID, MAX_LINKED_DIDS } from '../../src/ledger/runtime/application-state.js';
import { decodeApplicationAuthorization } from '../../src/protocol/payloads/application.js';
import { assertAccepted, assertError, kid, mutate, prepare, signHex } from '../support/directory-flows.js';
import {
  appUrl,
  authorizationBody,
  authorize,
  prepareApplication,
  prepareAuthorization,
  registerApplication,
  registrationBody,
} from '../support/application-flows.js';
import { operatorOf, registerDnsPersona, registerNamed, startPersonaDirectory, type Operator, type PersonaNetwork } from '../support/persona-flows.js';

type Body = Record<string, unknown>;

describe('applications', () => {
  let n: PersonaNetwork;
  let control: Operator;
  let other: Operator;
  let seed = 220;
  before(async () => {
    n = await startPersonaDirectory();
    control = await operatorOf(n.h, 210);
    other = await operatorOf(n.h, 211);
  });
  after(() => n.close());

  it('registration: prepare → sign → PUT; the read', async () => {
    const { h } = n;
    assertError(await h.call('GET', appUrl('push.app')), 404, 'application_not_found');
    const prep = await prepareApplication(h, 'push.app', { control_did: control.did, signer_key_id: 'root' });
    assert.equal(prep.status, 200, JSON.stringify(prep.body));
    const b = prep.body;
    assert.equal(b.application_id, 'push.app');
    assert.equal(b.extrinsic, 'register_application');
    assert.equal(b.nonce, 0, 'application nonces are JSON integers');
    assert.equal(b.canonical_payload, b.payload_to_sign);
    assert.deepEqual(Object.keys(b.request as Body).sort(), ['canonical_payload', 'control_did', 'nonce', 'signer_key_id']);
    const decoded = decodeApplicationAuthorization(parseHex(b.canonical_payload as string)!)!;
    assert.equal(decoded.domain, 'platform:application-registry:v1');
    assert.deepEqual(decoded.authorization, { action: 'register', applicationId: 'push.app', controlDid: control.did, status: 'Active', nonce: 0n });
    const body = registrationBody(b, control.key);
    const url = appUrl('push.app', '/registration');
    assertError(await h.call('PUT', url, { ...body, nonce: '0' }), 400, 'invalid_nonce');
    assertError(await h.call('PUT', url, { ...body, nonce: 1 }), 409, 'application_proof_stale');
    assertError(await h.call('PUT', url, { ...body, canonical_payload: toBase64(parseHex(b.canonical_payload as string)!) }), 400, 'invalid_canonical_payload');
    assertError(await h.call('PUT', url, { ...body, canonical_payload: '0x0102' }), 400, 'invalid_canonical_payload');
    const otherPrep = await prepareApplication(h, 'other.app', { control_did: control.did, signer_key_id: 'root' });
    assertError(await h.call('PUT', url, { ...body, canonical_payload: otherPrep.body.canonical_payload }), 409, 'application_proof_stale');
    assertError(await h.call('PUT', url, { ...body, signer_key_id: undefined }), 400, 'invalid_request');
    assertError(await h.call('PUT', url, { ...body, signature: signHex(other.key, b.payload_to_sign as string) }), 403, 'invalid_signature');
    assertError(await h.call('PUT', url, { ...body, signer_key_id: kid(control.did, 'none') }), 403, 'signer_not_authorized');
    const res = await h.call('PUT', url, body);
    assertAccepted(res);
    assert.equal(res.body.application_id, 'push.app');
    assert.equal(res.body.extrinsic, 'register_application');
    const dup = await h.call('PUT', url, body);
    assert.equal(dup.body.duplicate, true);
    h.settle();
    // After inclusion the nonce moved: stale.
    assertError(await h.call('PUT', url, body), 409, 'application_proof_stale');
    const read = await h.call('GET', appUrl('push.app'));
    assert.equal(read.status, 200);
    assert.deepEqual(
      { ...read.body, block_number: 0, block_hash: '' },
      {
        application_id: 'push.app',
        control_did: control.did,
        status: 'active',
        application_revision: 1,
        registered_at: read.body.registered_at,
        updated_at: read.body.registered_at,
        domain: null,
        domain_verified: false,
        linked_dids: [],
        policy_revision: null,
        block_number: 0,
        block_hash: '',
      },
    );
    assert.equal(typeof read.body.registered_at, 'number');
  });

  it('registration prepare errors', async () => {
    const { h } = n;
    await registerApplication(h, 'taken.app', control);
    const deact = await operatorOf(h, seed++);
    await mutate(h, deact.did, deact.key, 'deactivate_did');
    const cases: [string, Body, number, string][] = [
      ['Talaria Push', { control_did: control.did }, 400, 'invalid_application_id'],
      ['x'.repeat(65), { control_did: control.did }, 400, 'invalid_application_id'],
      ['taken.app', { control_did: control.did }, 409, 'application_already_exists'],
      ['new.app', { control_did: 'nope' }, 400, 'invalid_did'],
      ['new.app', { control_did: 'did:platform:11111111111111111111111' }, 404, 'did_not_found'],
      ['new.app', { control_did: deact.did }, 409, 'did_deactivated'],
      ['new.app', { control_did: control.did, signer_key_id: kid(control.did, 'missing') }, 403, 'signer_not_authorized'],
    ];
    for (const [id, body, status, code] of cases) assertError(await prepareApplication(h, id, body), status, code);
    // Tombstoned ids stay taken.
    await registerApplication(h, 'retired.app', control);
    await authorize(h, 'retired.app', { action: 'set_status', status: 'tombstoned' }, control.key);
    assertError(await prepareApplication(h, 'retired.app', { control_did: control.did }), 409, 'application_already_exists');
    assertError(await prepareAuthorization(h, 'retired.app', { action: 'set_status', status: 'active' }), 409, 'application_tombstoned');
  });

  it('domain: set to a DNS persona the control DID operates; clear', async () => {
    const { h } = n;
    await registerApplication(h, 'dom.app', control);
    await registerDnsPersona(n, 'apps.example.org', control);
    await registerDnsPersona(n, 'theirs.example.org', other);
    await registerNamed(h, 'nodomain', control);
    assertError(await prepareAuthorization(h, 'dom.app', { action: 'set_domain', domain: 'theirs.example.org' }), 403, 'domain_not_controlled');
    assertError(await prepareAuthorization(h, 'dom.app', { action: 'set_domain', domain: 'Apps.example.org' }), 400, 'invalid_domain');
    assertError(await prepareAuthorization(h, 'dom.app', { action: 'set_domain', domain: 'nodomain' }), 400, 'invalid_domain');
    assertError(await prepareAuthorization(h, 'dom.app', { action: 'set_domain' }), 400, 'invalid_request');
    const prep = await prepareAuthorization(h, 'dom.app', { action: 'set_domain', domain: 'apps.example.org', control_signer_key_id: 'root' });
    assert.equal(prep.status, 200, JSON.stringify(prep.body));
    assert.equal(prep.body.extrinsic, 'set_application_domain');
    assert.equal(prep.body.control_did, control.did);
    assert.equal(typeof prep.body.nonce, 'number');
    const req = prep.body.request as Body;
    assert.equal(req.domain, 'apps.example.org');
    assert.equal(req.control_signer_key_id, 'root');
    const body = authorizationBody(prep.body, control.key);
    // `signature` is a synonym of `control_signature`.
    const viaSignature = { ...body, signature: body.control_signature, control_signature: undefined };
    const res = await h.call('PUT', appUrl('dom.app', '/authorization'), viaSignature);
    assertAccepted(res);
    assert.equal(res.body.action, 'set_domain');
    h.settle();
    let read = (await h.call('GET', appUrl('dom.app'))).body;
    assert.equal(read.domain, 'apps.example.org');
    assert.equal(read.domain_verified, true);
    assert.equal(read.application_revision, 2);
    await authorize(h, 'dom.app', { action: 'clear_domain' }, control.key);
    read = (await h.call('GET', appUrl('dom.app'))).body;
    assert.equal(read.domain, null);
    assert.equal(read.domain_verified, false);
  });

  it('status, control change, linked DIDs (two signatures)', async () => {
    const { h } = n;
    await registerApplication(h, 'life.app', control);
    assertError(await prepareAuthorization(h, 'life.app', { action: 'set_status', status: 'paused' }), 400, 'invalid_request');
    assertError(await prepareAuthorization(h, 'life.app', { action: 'set_status', status: 'active' }), 409, 'invalid_status_transition');
    await authorize(h, 'life.app', { action: 'set_status', status: 'suspended' }, control.key);
    assert.equal((await h.call('GET', appUrl('life.app'))).body.status, 'suspended');
    await authorize(h, 'life.app', { action: 'set_status', status: 'active' }, control.key);

    // Linking needs the linked DID's signature over the same bytes.
    const prep = await prepareAuthorization(h, 'life.app', { action: 'link_did', linked_did: other.did, linked_signer_key_id: 'root' });
    assert.equal(prep.status, 200, JSON.stringify(prep.body));
    assert.equal(prep.body.extrinsic, 'set_application_linked_did');
    assert.equal((prep.body.request as Body).linked_signer_key_id, 'root');
    const url = appUrl('life.app', '/authorization');
    const onlyControl = authorizationBody(prep.body, control.key);
    assertError(await h.call('PUT', url, onlyControl), 400, 'invalid_signature_encoding');
    assertError(await h.call('PUT', url, authorizationBody(prep.body, control.key, control.key)), 403, 'invalid_signature');
    assertError(await h.call('PUT', url, authorizationBody(prep.body, other.key, other.key)), 403, 'invalid_signature');
    assertError(await h.call('PUT', url, { ...authorizationBody(prep.body, control.key, other.key), nonce: 99 }), 409, 'application_proof_stale');
    assertError(await h.call('PUT', url, { ...authorizationBody(prep.body, control.key, other.key), control_did: other.did }), 409, 'application_proof_stale');
    assertError(await h.call('PUT', url, { ...authorizationBody(prep.body, control.key, other.key), action: 'unlink_did' }), 409, 'application_proof_stale');
    assertError(await h.call('PUT', url, { ...authorizationBody(prep.body, control.key, other.key), action: 'rename' }), 400, 'unsupported_action');
    assertAccepted(await h.call('PUT', url, authorizationBody(prep.body, control.key, other.key)));
    h.settle();
    assert.deepEqual((await h.call('GET', appUrl('life.app'))).body.linked_dids, [other.did]);
    assertError(
      await prepareAuthorization(h, 'life.app', { action: 'link_did', linked_did: 'did:platform:11111111111111111111111' }),
      404,
      'linked_did_not_found',
    );
    assertError(
      await prepareAuthorization(h, 'life.app', { action: 'link_did', linked_did: other.did, linked_signer_key_id: kid(other.did, 'x') }),
      403,
      'signer_not_authorized',
    );
    await authorize(h, 'life.app', { action: 'unlink_did', linked_did: other.did }, control.key, other.key);
    assert.deepEqual((await h.call('GET', appUrl('life.app'))).body.linked_dids, []);

    // Control change: signed by the current control DID; the new control DID then signs.
    assertError(
      await prepareAuthorization(h, 'life.app', { action: 'update_control', new_control_did: 'did:platform:11111111111111111111111' }),
      404,
      'control_did_not_found',
    );
    assertError(
      await prepareAuthorization(h, 'life.app', { action: 'update_control', new_control_did: other.did, control_signer_key_id: kid(control.did, 'x') }),
      403,
      'signer_not_authorized',
    );
    await authorize(h, 'life.app', { action: 'update_control', new_control_did: other.did }, control.key);
    const read = (await h.call('GET', appUrl('life.app'))).body;
    assert.equal(read.control_did, other.did);
    await authorize(h, 'life.app', { action: 'set_status', status: 'suspended' }, other.key);
    // A payload prepared before the control change is stale.
    const before = await prepareAuthorization(h, 'life.app', { action: 'set_status', status: 'active' });
    await authorize(h, 'life.app', { action: 'set_status', status: 'active' }, other.key);
    assertError(await h.call('PUT', url, authorizationBody(before.body, other.key)), 409, 'application_proof_stale');
  });

  it('limits: a DID that controls an application stays; 16 applications per control DID, 16 linked DIDs', async () => {
    const { h } = n;
    const owner = await operatorOf(h, seed++);
    for (let i = 0; i < MAX_APPLICATIONS_PER_CONTROL_DID; i++) await registerApplication(h, `many${i}.app`, owner);
    for (const action of ['deactivate_did', 'delete_did']) {
      const res = await prepare(h, owner.did, action);
      assertError(res, 409, 'did_controls_application');
      assert.equal((res.body.details as Body).ledger_error, 'DidControlsApplication');
    }
    const more = await prepareApplication(h, 'one-more.app', { control_did: owner.did, signer_key_id: 'root' });
    assertError(more, 409, 'too_many_applications');
    assert.equal((more.body.details as Body).ledger_error, 'TooManyApplicationsForControlDid');

    for (let i = 0; i < MAX_LINKED_DIDS; i++) {
      const linked = await operatorOf(h, seed++);
      await authorize(h, 'many0.app', { action: 'link_did', linked_did: linked.did }, owner.key, linked.key);
    }
    assert.equal(((await h.call('GET', appUrl('many0.app'))).body.linked_dids as string[]).length, MAX_LINKED_DIDS);
    const extra = await prepareAuthorization(h, 'many0.app', { action: 'link_did', linked_did: other.did });
    assertError(extra, 409, 'too_many_linked_dids');
    assert.equal((extra.body.details as Body).ledger_error, 'TooManyLinkedDids');
  });

  it('authorization errors: unknown application, bad ids, missing fields', async () => {
    const { h } = n;
    assertError(await prepareAuthorization(h, 'ghost.app', { action: 'clear_domain' }), 404, 'application_not_found');
    assertError(await prepareAuthorization(h, 'Ghost App', { action: 'clear_domain' }), 400, 'invalid_application_id');
    await registerApplication(h, 'err.app', control);
    assertError(await prepareAuthorization(h, 'err.app', { action: 'launch' }), 400, 'unsupported_action');
    assertError(await prepareAuthorization(h, 'err.app', { action: 'link_did' }), 400, 'invalid_request');
    assertError(await prepareAuthorization(h, 'err.app', { action: 'update_control', new_control_did: 'x' }), 400, 'invalid_did');
    const prep = await prepareAuthorization(h, 'err.app', { action: 'clear_domain' });
    const url = appUrl('err.app', '/authorization');
    const body = authorizationBody(prep.body, control.key);
    assertError(await h.call('PUT', url, { ...body, canonical_payload: undefined }), 400, 'invalid_canonical_payload');
    assertError(await h.call('PUT', url, { ...body, nonce: undefined }), 400, 'invalid_nonce');
    assertError(await h.call('PUT', url, { ...body, control_signature: 'xx' }), 400, 'invalid_signature_encoding');
    assertAccepted(await h.call('PUT', url, body));
    h.settle();
  });
});
