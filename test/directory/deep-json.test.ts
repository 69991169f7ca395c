/** Deeply nested JSON at the Directory: 400 `invalid_json` (`details.reason` `too_deep`) for documents and policies, never a 5xx. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_JSON_DEPTH } from '../../src/http/json-depth.js';
import { deepArrays, deepObjects, withMember } from '../support/deep-json.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { injectChecked } from '../support/inject-contract.js';

describe('Directory: deeply nested JSON', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  const post = async (method: 'POST' | 'PUT', url: string, text: string) => {
    const res = await injectChecked(h.server, { method, url, payload: text, headers: { 'content-type': 'application/json' } });
    return { status: res.statusCode, body: res.json() as Record<string, unknown> };
  };
  const did = 'did:platform:8Dfbj';

  it('a DID document, a v2 policy and a v3 policy nesting thousands of levels → 400 invalid_json too_deep', async () => {
    for (const nested of [deepObjects(5000), deepArrays(10_000)]) {
      const cases: Array<['POST' | 'PUT', string, string]> = [
        ['POST', '/register-did/prepare', withMember({ did, root_pubkey: '00' }, 'did_document', `{"id":"${did}","service":${nested}}`)],
        ['PUT', `/dids/${did}/document/proof`, withMember({ document_nonce: '0' }, 'did_document', nested)],
        ['PUT', `/delivery-policies/dids/${did}`, withMember({ policy_nonce: '0' }, 'policy', `{"rules":[{"action":${nested}}]}`)],
        ['POST', `/policies/v3/did/${did}/prepare`, withMember({}, 'policy', `{"rules":${nested}}`)],
      ];
      for (const [method, url, text] of cases) {
        const res = await post(method, url, text);
        assert.equal(res.status, 400, `${method} ${url}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.code, 'invalid_json');
        assert.deepEqual(res.body.details, { reason: 'too_deep', max_depth: MAX_JSON_DEPTH });
      }
    }
    // nesting up to the bound passes the parse (the route judges the content)
    const res = await post('POST', '/register-did/prepare', withMember({ did, root_pubkey: '00' }, 'extra', deepObjects(MAX_JSON_DEPTH - 1)));
    assert.equal(res.status, 400);
    assert.notEqual(res.body.code, 'invalid_json');
  });
});
