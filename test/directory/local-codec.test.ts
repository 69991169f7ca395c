/**
 * One implementation of each payload rule (DESIGN.md principle 3): a canonical payload built by a client with the
 * shared codec, without the prepare route, is byte for byte what prepare produces and is accepted as is.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { to0x, toBase64 } from '../../src/base/bytes.js';
import { documentHash } from '../../src/protocol/document.js';
import { parseDidDocument } from '../../src/protocol/document-json.js';
import { multibaseEd25519 } from '../../src/protocol/keys.js';
import { registrationSigningBytes, registrationToken } from '../../src/protocol/payloads/registration.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import {
  ALL_ACTIONS,
  assertAccepted,
  didOf,
  docOf,
  kaOf,
  keyOf,
  kid,
  localSubmission,
  nonceFor,
  prepare,
  registerFixture,
  resolve,
  vmOf,
  type Fixture,
} from '../support/directory-flows.js';

type Body = Record<string, unknown>;

function fieldsFor(f: Fixture, action: string): Body {
  const k = keyOf(210);
  const table: Record<string, Body> = {
    add_alias: { alias: ' Local ' },
    update_alias: { old_alias: f.alias, new_alias: 'local-2' },
    remove_alias: { alias: f.alias },
    add_device: { device_id: 'local/1' },
    update_device: { device_id: 'dev-1', new_device_id: 'local-2' },
    remove_device: { device_id: 'dev-1' },
    tombstone_device: { device_id: 'dev-1' },
    deactivate_did: {},
    delete_did: {},
    UpdateRootPubkey: { new_root_pubkey: multibaseEd25519(k.publicKey, false) },
    AddVerificationMethod: { verification_method: vmOf(f.did, 'key-3', k) },
    UpdateVerificationMethod: { verification_method: vmOf(f.did, 'key-2', k) },
    RemoveVerificationMethod: { id: kid(f.did, 'key-2') },
    AddAuthentication: { id: kid(f.did, 'key-2') },
    RemoveAuthentication: { id: kid(f.did, 'key-1') },
    AddKeyAgreement: { key_agreement: kaOf(f.did, 'ka-2', 5) },
    UpdateKeyAgreement: { key_agreement: kaOf(f.did, 'ka-1', 5) },
    RemoveKeyAgreement: { id: kid(f.did, 'ka-1') },
    AddService: { service: { id: kid(f.did, 'svc-2'), type: 'T', serviceEndpoint: ['https://a', 'https://b'], priority: 4294967295 } },
    UpdateService: { service: { id: kid(f.did, 'svc-1'), type: 'T', serviceEndpoint: 'https://c', authorization: [] } },
    RemoveService: { id: kid(f.did, 'svc-1') },
    replace_document: { document: { id: f.did, verificationMethod: [vmOf(f.did, 'key-1', f.key)], authentication: [kid(f.did, 'key-1')] } },
  };
  return table[action]!;
}

describe('canonical payloads built locally with the shared codec', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  ALL_ACTIONS.forEach((action, i) => {
    it(`${action}: equals prepare's payload_to_sign and is accepted without prepare`, async () => {
      const f = await registerFixture(h, 100 + i);
      const fields = fieldsFor(f, action);
      const nonce = await nonceFor(h, f.did, action);
      const validUntil = BigInt(h.clock.nowMs() + 120_000);
      const signer = i % 2 === 0 ? 'root' : kid(f.did, 'key-2');
      const signWith = signer === 'root' ? f.key : f.key2;
      const local = localSubmission(h.profile, f.did, signWith, action, fields, {
        nonce,
        validUntil,
        signerKeyId: signer,
        encoding: i % 3 === 0 ? 'base64' : 'hex',
      });

      const prep = await prepare(h, f.did, action, { ...fields, valid_until: String(validUntil), signer_key_id: signer });
      assert.equal(prep.status, 200, JSON.stringify(prep.body));
      assert.equal(prep.body.payload_to_sign, to0x(local.payload));
      const req = prep.body.request as Body;
      for (const k of Object.keys(req)) {
        if (k === 'canonical_payload') continue;
        assert.deepEqual(local.body[k], req[k], `request.${k}`);
      }

      const res = await h.call(local.route.method, local.route.url, local.body);
      assertAccepted(res, action);
      h.settle();
      assert.equal((await h.call('GET', `/transactions/${res.body.tx_hash}`)).body.status, 'finalized');
    });
  });

  it('a registration built locally is accepted without prepare and equals prepare byte for byte', async () => {
    const did = didOf(150);
    const key = keyOf(150);
    const document = docOf(did, key);
    const expiryMs = BigInt(h.clock.nowMs() + 600_000);
    const bytes = registrationSigningBytes(h.profile, {
      did,
      rootPubkey: key.publicKey,
      alias: 'local-reg',
      documentHash: documentHash(parseDidDocument(document, did)),
      expiryMs,
    });
    const body = { did, root_pubkey: multibaseEd25519(key.publicKey), did_document: document, alias: 'Local-Reg', timestamp: registrationToken(expiryMs) };
    const prep = await h.call('POST', '/register-did/prepare', { ...body, expiry_ms: String(expiryMs) });
    assert.equal(prep.body.payload_to_sign, to0x(bytes));
    const res = await h.call('POST', '/register-did', { ...body, signature: toBase64(key.sign(bytes)) });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    h.settle();
    assert.deepEqual((await resolve(h, did)).aliases, ['local-reg']);
  });
});
