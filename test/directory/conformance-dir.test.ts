/**
 * Directory conformance fixes: the DID byte cap named in `details` (`max_bytes`), application ids no HTTP client
 * can address, wrong JSON types refused, required fields required (per profile where a deployed client differs),
 * one `policy_id` for a v2-written policy, and the shape of a persona read.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { assertAccepted, assertError, prepareSigned, registerDid, submit } from '../support/directory-flows.js';
import { appUrl, prepareApplication } from '../support/application-flows.js';

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
        control_did: control.did, signer_key_id: 'root', nonce: 0, canonical_payload: '0x00', signature: 'AA',
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
});

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
