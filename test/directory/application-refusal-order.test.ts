/**
 * The refusal order of an application's authorization routes (http-api.md §9): the id, the application, then the
 * body's fields — read by the route's parser, refused after the application is found — the proof's freshness and
 * the signers. Each ladder sends every rung with all later faults (test/support/refusal-ladder.ts).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertAccepted, assertError, kid, signHex } from '../support/directory-flows.js';
import { appUrl, authorizationBody, prepareAuthorization, registerApplication } from '../support/application-flows.js';
import { climb, faulted, type Rung } from '../support/refusal-ladder.js';
import { operatorOf, startPersonaDirectory, type Operator, type PersonaNetwork } from '../support/persona-flows.js';

describe('application authorization: refusal order', () => {
  let n: PersonaNetwork;
  let control: Operator;
  let linked: Operator;
  let other: Operator;
  before(async () => {
    n = await startPersonaDirectory();
    control = await operatorOf(n.h, 241);
    linked = await operatorOf(n.h, 242);
    other = await operatorOf(n.h, 243);
  });
  after(() => n.close());

  it('prepare and submit of a linked DID: id, application, action, signers, fields, nonce, bytes, signatures', async () => {
    const { h } = n;
    const id = 'order.app';
    await registerApplication(h, id, control);
    const base = { action: 'link_did', linked_did: linked.did, control_signer_key_id: 'root', linked_signer_key_id: 'root' };
    const fieldRungs: Rung[] = [
      { fault: { action: 'link' }, status: 400, code: 'unsupported_action' },
      { fault: { control_signer_key_id: '' }, status: 400, code: 'invalid_request', field: 'control_signer_key_id' },
      { fault: { linked_did: 'x' }, status: 400, code: 'invalid_did', field: 'linked_did' },
      { fault: { linked_signer_key_id: '' }, status: 400, code: 'invalid_request', field: 'linked_signer_key_id' },
    ];

    // POST …/authorization/prepare
    const prepRungs: Rung[] = [
      ...fieldRungs,
      { fault: { control_signer_key_id: kid(control.did, 'none') }, status: 403, code: 'signer_not_authorized', field: 'control_signer_key_id' },
      { fault: { linked_signer_key_id: kid(linked.did, 'none') }, status: 403, code: 'signer_not_authorized', field: 'linked_signer_key_id' },
    ];
    await climb((body) => prepareAuthorization(h, id, body), base, prepRungs);
    // The id's syntax, then the application, come before every field.
    assertError(await prepareAuthorization(h, 'Bad Id', faulted(base, prepRungs)), 400, 'invalid_application_id');
    assertError(await prepareAuthorization(h, 'missing.app', faulted(base, prepRungs)), 404, 'application_not_found');
    const prep = await prepareAuthorization(h, id, base);
    assert.equal(prep.status, 200, JSON.stringify(prep.body));

    // PUT …/authorization
    const good = authorizationBody(prep.body, control.key, linked.key);
    const url = appUrl(id, '/authorization');
    const rungs: Rung[] = [
      ...fieldRungs,
      { fault: { nonce: '0' }, status: 400, code: 'invalid_nonce' },
      { fault: { canonical_payload: '0x0102' }, status: 400, code: 'invalid_canonical_payload' },
      { fault: { control_signature: 'abc' }, status: 400, code: 'invalid_signature_encoding', field: 'control_signature' },
      { fault: { linked_signature: 'abc' }, status: 400, code: 'invalid_signature_encoding', field: 'linked_signature' },
      { fault: { control_did: 'x' }, status: 400, code: 'invalid_did', field: 'control_did' },
      // the proof's freshness (control DID, nonce), then the signers, then the ledger's signature checks
      { fault: { control_did: other.did }, status: 409, code: 'application_proof_stale', field: 'control_did' },
      { fault: { nonce: (good.nonce as number) + 1 }, status: 409, code: 'application_proof_stale' },
      { fault: { control_signer_key_id: kid(control.did, 'none') }, status: 403, code: 'signer_not_authorized', field: 'control_signer_key_id' },
      { fault: { linked_signer_key_id: kid(linked.did, 'none') }, status: 403, code: 'signer_not_authorized', field: 'linked_signer_key_id' },
      { fault: { control_signature: signHex(other.key, prep.body.payload_to_sign as string) }, status: 403, code: 'invalid_signature' },
    ];
    await climb((body) => h.call('PUT', url, body), good, rungs);
    assertError(await h.call('PUT', appUrl('Bad Id', '/authorization'), faulted(good, rungs)), 400, 'invalid_application_id');
    assertError(await h.call('PUT', appUrl('missing.app', '/authorization'), faulted(good, rungs)), 404, 'application_not_found');
    assertAccepted(await h.call('PUT', url, good));
    h.settle();
  });
});
