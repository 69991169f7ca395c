/**
 * Service ids are complete DID URLs of the DID itself (service-spec.md: "Complete DID URL such as `<did>#relay`")
 * on profile `platform`: registration, AddService, UpdateService and a document replacement refuse anything else
 * with 400 `invalid_document` (`reason: "service_id_not_did_url"`); profile `openpayload` stores ids as given.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { assertError, didOf, docOf, keyOf, kid, mutate, prepare, prepareRegistration, registerDid, resolve, type Reply } from '../support/directory-flows.js';

const svc = (id: string) => ({ id, type: 'PlatformRelayService', serviceEndpoint: ['https://relay.example/inbox'] });

function refused(res: Reply, field: string): void {
  assertError(res, 400, 'invalid_document');
  assert.deepEqual(res.body.details, { reason: 'service_id_not_did_url', field });
}

describe('service ids on profile platform', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  it('refuses a bare id, a relative one, another DID’s URL and an empty fragment; takes <did>#…', async () => {
    const r = await registerDid(h, 61);
    const other = didOf(62);
    for (const id of ['relay', '#relay', kid(other, 'relay'), `${r.did}#`, `${r.did}relay`]) {
      refused(await prepare(h, r.did, 'AddService', { service: svc(id) }), 'service[0].id');
      refused(await prepare(h, r.did, 'replace_document', { document: { id: r.did, service: [svc(kid(r.did, 'ok')), svc(id)] } }), 'document.service[1].id');
    }
    await mutate(h, r.did, r.key, 'AddService', { service: svc(kid(r.did, 'relay')) });
    refused(await prepare(h, r.did, 'UpdateService', { service: { ...svc('relay'), serviceEndpoint: ['https://relay.example/2'] } }), 'service[0].id');
    assert.deepEqual(((await resolve(h, r.did)).document as { service: unknown[] }).service, [svc(kid(r.did, 'relay'))]);

    const did = didOf(63);
    const key = keyOf(63);
    const document = { ...docOf(did, key), service: [svc('relay')] };
    const res = await h.call('POST', '/register-did/prepare', { did, root_pubkey: '0x' + Buffer.from(key.publicKey).toString('hex'), did_document: document });
    refused(res, 'did_document.service[0].id');
  });
});

describe('service ids on profile openpayload', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory({ profile: 'openpayload' });
  });
  after(() => h.close());

  it('are stored as given, as the deployed chain does', async () => {
    const did = didOf(64, 'openpayload');
    const key = keyOf(64);
    const { prepared } = await prepareRegistration(h, 64, { did, key, document: { ...docOf(did, key), service: [svc('relay')] } });
    assert.ok(prepared.payload_to_sign);
    const r = await registerDid(h, 65);
    await mutate(h, r.did, r.key, 'AddService', { service: svc('inbox') });
    assert.deepEqual(((await resolve(h, r.did)).document as { service: unknown[] }).service, [svc('inbox')]);
  });
});
