/**
 * Replays (http-api.md §2.2): a submission identical to one already included is refused — nonce_mismatch for
 * every nonce-bearing payload kind, did_already_exists for a registration.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { to0x } from '../../src/base/bytes.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { assertError, keyOf, kid, mutate, nonces, registerDid, registrationSubmitBody, resolve, vmOf, type Reply } from '../support/directory-flows.js';

type Body = Record<string, unknown>;

describe('replays after inclusion', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  const kinds: [string, string, (did: string) => Body, string][] = [
    ['alias payload', 'add_alias', () => ({ alias: 'once' }), 'alias_nonce'],
    ['document patch payload', 'AddVerificationMethod', (did) => ({ verification_method: vmOf(did, 'key-2', keyOf(70)) }), 'document_nonce'],
    ['root-key payload', 'UpdateRootPubkey', () => ({ new_root_pubkey: to0x(keyOf(71).publicKey) }), 'root_pubkey_nonce'],
    ['control payload', 'add_device', () => ({ device_id: 'once' }), 'control_nonce'],
    [
      'document replacement',
      'replace_document',
      (did) => ({ document: { id: did, service: [{ id: kid(did, 's'), type: 'T', serviceEndpoint: 'https://s' }] } }),
      'document_nonce',
    ],
  ];

  kinds.forEach(([name, action, fields, domain], i) => {
    it(`refuses a replayed ${name} with 409 nonce_mismatch`, async () => {
      const r = await registerDid(h, 10 + i);
      const m = await mutate(h, r.did, r.key, action, fields(r.did));
      const version = (await resolve(h, r.did)).version;
      const replay: Reply = await h.call(m.route.method, m.route.url, m.body);
      assertError(replay, 409, 'nonce_mismatch');
      const details = replay.body.details as Body;
      assert.equal(details.nonce_domain, domain);
      assert.equal(details.expected, '1');
      assert.equal(details.received, '0');
      assert.match(replay.body.message as string, new RegExp(`^${domain} is 1, request used 0$`));
      assert.equal((await nonces(h, r.did))[domain], '1');
      assert.equal((await resolve(h, r.did)).version, version);
    });
  });

  it('refuses a replayed registration with 409 did_already_exists', async () => {
    const r = await registerDid(h, 30, { alias: 'registered-once' });
    const replay = await h.call('POST', '/register-did', registrationSubmitBody(r.prepared, r.key));
    assertError(replay, 409, 'did_already_exists');
    assert.equal((await resolve(h, r.did)).version, 1);
  });

  it('refuses a replayed deactivation (the DID is deactivated) and a replayed deletion (the DID is gone)', async () => {
    const a = await registerDid(h, 31);
    const deact = await mutate(h, a.did, a.key, 'deactivate_did');
    assertError(await h.call(deact.route.method, deact.route.url, deact.body), 409, 'did_deactivated');
    const b = await registerDid(h, 32);
    const del = await mutate(h, b.did, b.key, 'delete_did');
    assertError(await h.call(del.route.method, del.route.url, del.body), 404, 'did_not_found');
  });

  it('refuses a deletion replayed after the DID was registered again (openpayload: its nonces continue, so by nonce)', async () => {
    // profile platform never registers a deleted DID again (lifecycle.test.ts); openpayload does
    const op = await startDirectory({ profile: 'openpayload' });
    try {
      const first = await registerDid(op, 33);
      const del = await mutate(op, first.did, first.key, 'delete_did');
      await registerDid(op, 33, { key: keyOf(34) });
      // still valid, but its control nonce 0 is behind the re-registered DID's (1)
      const replay = await op.call(del.route.method, del.route.url, del.body);
      assertError(replay, 409, 'nonce_mismatch');
      assert.equal((await resolve(op, first.did)).root_pubkey, to0x(keyOf(34).publicKey));
    } finally {
      await op.close();
    }
  });
});
