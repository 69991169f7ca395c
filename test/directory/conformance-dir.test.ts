/**
 * Directory conformance fixes: the DID byte cap named in `details` (`max_bytes`), application ids no HTTP client
 * can address, wrong JSON types refused, required fields required (per profile where a deployed client differs),
 * one `policy_id` for a v2-written policy, and the shape of a persona read.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { assertAccepted, assertError, docOf, prepareSigned, registerDid, signHex, submit } from '../support/directory-flows.js';
import { appUrl, prepareApplication } from '../support/application-flows.js';
import { forwardPlan, policyJsonV2, registerServiceDid, rule, target, writeV2 } from '../support/policy-flows.js';
import { prepareNamed, registerNamed, signedRequest } from '../support/persona-flows.js';
import { LocalDirectoryPort } from '../../src/directory/local-port.js';

type Body = Record<string, unknown>;

/** A syntactically valid DID of 133 bytes: 32-character platform, 96-character address. */
const LONG_DID = `did:${'a'.repeat(32)}:${'1'.repeat(96)}`;

describe('Directory conformance', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  it('a DID over 128 bytes is 400 invalid_did whose details name the limit', async () => {
    assert.equal(LONG_DID.length, 133);
    const key = { field: 'did', reason: 'too_long', max_bytes: 128 };
    const check = (res: { status: number; body: Body }, field = 'did') => {
      assertError(res, 400, 'invalid_did');
      assert.deepEqual(
        { field: (res.body.details as Body).field, reason: (res.body.details as Body).reason, max_bytes: (res.body.details as Body).max_bytes },
        { ...key, field },
      );
    };
    check(await h.call('GET', `/resolve/${encodeURIComponent(LONG_DID)}`));
    check(await h.call('GET', `/registration-status/${encodeURIComponent(LONG_DID)}`));
    check(await h.call('POST', '/register-did/prepare', { did: LONG_DID, root_pubkey: '0x' + '11'.repeat(32), did_document: { id: LONG_DID } }));
    check(await h.call('POST', `/personas/someone/named/prepare`, { operator_did: LONG_DID }), 'operator_did');
    // A malformed DID says so, without a byte limit.
    const bad = await h.call('GET', `/resolve/${encodeURIComponent('did:Platform:1111111111111111')}`);
    assertError(bad, 400, 'invalid_did');
    assert.equal((bad.body.details as Body).reason, 'invalid_format');
    assert.equal((bad.body.details as Body).max_bytes, undefined);
  });

  it('application ids "." and ".." are refused at registration: no HTTP client can address them', async () => {
    const control = await registerDid(h, 40);
    // URL libraries remove dot segments (`%2E` included) before sending, so a raw socket request it is.
    const address = await h.server.fastify.listen({ host: '127.0.0.1', port: 0 });
    const raw = async (method: string, path: string, body: Body) => {
      const res = await rawRequest(address, method, path, JSON.stringify(body));
      return { status: res.status, body: JSON.parse(res.text) as Body };
    };
    for (const id of ['.', '..', '%2E', '%2E%2E', '.%2e']) {
      const prep = await raw('POST', `/applications/${id}/registration/prepare`, { control_did: control.did, signer_key_id: 'root' });
      assertError(prep, 400, 'invalid_application_id');
      assert.equal((prep.body.details as Body).reason, 'unaddressable');
      const put = await raw('PUT', `/applications/${id}/registration`, {
        control_did: control.did,
        signer_key_id: 'root',
        nonce: 0,
        canonical_payload: '0x00',
        signature: 'AA',
      });
      assertError(put, 400, 'invalid_application_id');
    }
    // Ids that merely contain dots stay valid.
    for (const id of ['...', '.a', 'a..b']) {
      const prep = await prepareApplication(h, id, { control_did: control.did, signer_key_id: 'root' });
      assert.equal(prep.status, 200, `${id}: ${JSON.stringify(prep.body)}`);
    }
    assertError(await h.call('GET', appUrl('x', '')), 404, 'application_not_found');
  });

  it('a v2-written policy has one policy_id: the write, GET /delivery-policies, the resolution and the Relay’s port agree', async () => {
    const relay = await registerServiceDid(h, 41, [{ fragment: 'relay', kind: 'Relay' }]);
    const recipient = await registerServiceDid(h, 42, []);
    const written = await writeV2(h, recipient.key, {
      action: 'set_did_policy_v2',
      did: recipient.did,
      policy: policyJsonV2('DID', recipient.did, recipient.did, [rule('r', 1, forwardPlan([target(relay, 'relay')]))]),
    });
    const id = written.policy_id as string;
    assert.match(id, /^0x[0-9a-f]{64}$/);
    const read = await h.call('GET', `/delivery-policies/dids/${encodeURIComponent(recipient.did)}`);
    assert.equal((read.body.policy as Body).policy_id, id);
    const resolved = await h.call('GET', `/delivery-resolution/${encodeURIComponent(recipient.did)}`);
    assert.equal(resolved.status, 200, JSON.stringify(resolved.body));
    assert.equal((resolved.body.policy as Body).policy_id, id);
    // The Relay's DeliveryResult `details.policy_id` comes from this port.
    const view = await new LocalDirectoryPort(h.ledger, h.clock).resolveDelivery(recipient.did, null, null);
    assert.equal(view?.policy?.policyId, id);
  });

  it('GET /personas/{p} of a named persona is one flat record a client reading result.get("persona", result) can use', async () => {
    const op = await registerDid(h, 45);
    await registerNamed(h, 'flat', { did: op.did, key: op.key });
    const res = await h.call('GET', '/personas/flat');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.name, 'flat');
    assert.equal('persona' in res.body, false);
    // What the deployed register / renew / resume client does with the answer:
    const record = (Object.hasOwn(res.body, 'persona') ? res.body.persona : res.body) as Body;
    assert.equal(typeof record, 'object');
    assert.equal(record.operator_did, op.did);
    assert.equal(record.kind, 'named');
    assert.equal(record.active, true);
  });

  it('PUT /personas/{p}/named requires controller_keys and controller_threshold on platform; openpayload keeps the defaults', async () => {
    const op = await registerDid(h, 46);
    const prep = await prepareNamed(h, 'strict', { operator_did: op.did });
    assert.equal(prep.status, 200, JSON.stringify(prep.body));
    const body = signedRequest(prep.body, op.key);
    for (const field of ['controller_keys', 'controller_threshold']) {
      const { [field]: _omitted, ...rest } = body;
      const res = await h.call('PUT', '/personas/strict/named', rest);
      assertError(res, 400, 'invalid_request');
      assert.equal((res.body.details as Body).field, field);
    }
    assertAccepted(await h.call('PUT', '/personas/strict/named', body));
    h.settle();

    const o = await startDirectory({ profile: 'openpayload' });
    try {
      const oop = await registerDid(o, 46);
      const oprep = await prepareNamed(o, 'lenient', { operator_did: oop.did });
      assert.equal(oprep.status, 200, JSON.stringify(oprep.body));
      const { controller_keys: _k, controller_threshold: _t, ...rest } = signedRequest(oprep.body, oop.key);
      assertAccepted(await o.call('PUT', '/personas/lenient/named', rest));
    } finally {
      await o.close();
    }
  });

  it('PUT /dids/{did}/document/proof: a pubkey of the wrong JSON type is 400, never ignored', async () => {
    const r = await registerDid(h, 43);
    const p = await prepareSigned(h, r.did, r.key, 'replace_document', { document: docOf(r.did, r.key) });
    for (const pubkey of [true, 0, {}, [], 1.5]) {
      const res = await submit(h, p, { ...p.body, pubkey });
      assertError(res, 400, 'invalid_request');
      assert.equal((res.body.details as Body).field, 'pubkey');
    }
    assertError(await submit(h, p, { ...p.body, pubkey: '0x' + '00'.repeat(32) }), 403, 'signer_not_authorized');
    assertAccepted(await submit(h, p));
    h.settle();
  });

  it('PUT /applications/{id}/authorization: a control_did that is not a DID string is 400 invalid_did', async () => {
    const control = await registerDid(h, 44);
    const prep = await prepareApplication(h, 'types.app', { control_did: control.did, signer_key_id: 'root' });
    assert.equal(prep.status, 200, JSON.stringify(prep.body));
    const body = { ...(prep.body.request as Body), signature: signHexOf(control, prep.body.payload_to_sign as string) };
    assertError(await h.call('PUT', appUrl('types.app', '/registration'), { ...body, signer_key_id: null }), 400, 'invalid_request');
    assertAccepted(await h.call('PUT', appUrl('types.app', '/registration'), body));
    h.settle();
    const auth = await h.call('POST', appUrl('types.app', '/authorization/prepare'), {
      action: 'set_status',
      status: 'suspended',
      control_signer_key_id: 'root',
    });
    assert.equal(auth.status, 200, JSON.stringify(auth.body));
    const signed = { ...(auth.body.request as Body), control_signature: signHexOf(control, auth.body.payload_to_sign as string) };
    for (const controlDid of [7, true, ['x'], 'not-a-did']) {
      const res = await h.call('PUT', appUrl('types.app', '/authorization'), { ...signed, control_did: controlDid });
      assertError(res, 400, 'invalid_did');
      assert.equal((res.body.details as Body).field, 'control_did');
    }
    assertAccepted(await h.call('PUT', appUrl('types.app', '/authorization'), signed));
  });
});

const signHexOf = (r: { key: Parameters<typeof signHex>[0] }, hex: string): string => signHex(r.key, hex);

/** One HTTP request with the path sent exactly as given (no URL normalisation). */
function rawRequest(base: string, method: string, path: string, body: string): Promise<{ status: number; text: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
