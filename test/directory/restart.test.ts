/**
 * Durability across a restart (DESIGN.md principle 8): every DID, alias, nonce and block survives, and a change
 * accepted (202) but not yet in a block is still included after the Directory is reopened on the same data.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { to0x } from '../../src/base/bytes.js';
import { startDirectory } from '../support/directory-harness.js';
import {
  assertAccepted,
  assertError,
  clientRegistrationBody,
  docOf,
  keyOf,
  kid,
  mutate,
  nonces,
  prepareRegistration,
  prepareSigned,
  registerDid,
  registrationSubmitBody,
  resolve,
  submit,
} from '../support/directory-flows.js';

type Body = Record<string, unknown>;

describe('restart on the same data directory', () => {
  it('keeps every DID, alias, nonce and block, and includes changes still pending at shutdown', async () => {
    const h1 = await startDirectory();
    const a = await registerDid(h1, 1, { alias: 'alpha' });
    const b = await registerDid(h1, 2, { alias: 'beta' });
    await mutate(h1, a.did, a.key, 'add_device', { device_id: 'phone' });
    await mutate(h1, a.did, a.key, 'add_alias', { alias: 'alpha-2' });
    await mutate(h1, b.did, b.key, 'deactivate_did');
    const svc = { id: kid(a.did, 'svc'), type: 'PlatformRelayService', serviceEndpoint: ['https://relay.example'] };
    const pendingChange = await mutate(h1, a.did, a.key, 'AddService', { service: svc }, { pending: true });
    const pendingReg = await registerDid(h1, 3, { alias: 'gamma', pending: true });
    // prepared against the pool state before the restart, submitted after it
    const prepared = await prepareSigned(h1, a.did, a.key, 'add_alias', { alias: 'after-restart' });

    const before = {
      a: await resolve(h1, a.did),
      b: await resolve(h1, b.did),
      nonces: await nonces(h1, a.did),
      latest: (await h1.call('GET', '/blocks/latest')).body,
      block1: (await h1.call('GET', '/blocks/1')).body,
    };
    assert.equal(before.nonces.document_nonce, '1', 'the pending change reserved its nonce');
    await h1.close(true);

    const h2 = await startDirectory({ dir: h1.dir, clock: h1.clock });
    try {
      assert.deepEqual(await resolve(h2, a.did), before.a, 'the record and its pending markers');
      assert.deepEqual(await resolve(h2, b.did), before.b);
      assert.equal((await resolve(h2, b.did)).deactivated, true);
      assert.deepEqual(await nonces(h2, a.did), before.nonces);
      assert.deepEqual((await h2.call('GET', '/blocks/latest')).body, before.latest);
      assert.deepEqual((await h2.call('GET', '/blocks/1')).body, before.block1);
      for (const [alias, did] of [
        ['alpha', a.did],
        ['alpha-2', a.did],
        ['beta', b.did],
      ] as const) {
        assert.deepEqual((await h2.call('GET', `/aliases/${alias}`)).body, { alias, did });
      }
      assert.equal((await h2.call('GET', `/transactions/${pendingChange.submitted.tx_hash}`)).body.status, 'pending');
      const reg = await h2.call('GET', `/registration-status/${pendingReg.did}`);
      assert.equal(reg.body.registration_status, 'pending');
      assert.equal(reg.body.tx_hash, pendingReg.submitted.tx_hash);
      assertError(await h2.call('GET', `/resolve/${pendingReg.did}`), 425, 'registration_pending');
      // an identical resubmission is still recognised as a duplicate of the pooled change
      const dup = await submit(h2, pendingChange);
      assert.equal(assertAccepted(dup), pendingChange.submitted.tx_hash);
      assert.equal(dup.body.duplicate, true);
      // deactivation survived too
      assertError(await h2.call('POST', `/dids/${encodeURIComponent(b.did)}/prepare`, { did: b.did, action: 'add_alias', alias: 'x' }), 409, 'did_deactivated');

      assertAccepted(await submit(h2, prepared), 'add_alias');
      h2.settle();
      const rec = await resolve(h2, a.did);
      assert.deepEqual((rec.document as Body).service, [svc]);
      assert.deepEqual(rec.aliases, ['alpha', 'alpha-2', 'after-restart']);
      assert.equal(rec.pending_document_action, false);
      assert.equal(rec.document_nonce, '1');
      assert.equal((await h2.call('GET', `/transactions/${pendingChange.submitted.tx_hash}`)).body.status, 'finalized');
      assert.deepEqual((await resolve(h2, pendingReg.did)).aliases, ['gamma']);
      assert.equal((await h2.call('GET', `/registration-status/${pendingReg.did}`)).body.registration_status, 'confirmed');
      assert.equal((await h2.call('GET', '/blocks/latest')).body.parent_hash, before.latest.hash);
    } finally {
      await h2.close();
    }
  });

  it('drops pending changes that expired while the Directory was down, as failed transactions without a block', async () => {
    const h1 = await startDirectory();
    const a = await registerDid(h1, 1);
    const p = await prepareSigned(h1, a.did, a.key, 'add_alias', { alias: 'short', valid_until: String(h1.clock.nowMs() + 1000) });
    const change = (await submit(h1, p)).body.tx_hash as string;
    const reg = await prepareRegistration(h1, 2, { expiryMs: String(h1.clock.nowMs() + 1000) });
    const regTx = (await h1.call('POST', '/register-did', registrationSubmitBody(reg.prepared, reg.key))).body.tx_hash as string;
    await h1.close(true);

    h1.clock.advance(1000);
    const h2 = await startDirectory({ dir: h1.dir, clock: h1.clock });
    try {
      const tx = await h2.call('GET', `/transactions/${change}`);
      assert.equal(tx.status, 200);
      assert.equal(tx.body.status, 'failed');
      assert.equal('block_number' in tx.body, false);
      assert.equal('block_hash' in tx.body, false);
      assert.deepEqual(tx.body.error, { code: 'authorization_expired', message: (tx.body.error as Body).message, ledger_error: 'AliasAuthorizationExpired' });
      assert.equal((await nonces(h2, a.did)).alias_nonce, '0', 'the reserved nonce is free again');
      assert.deepEqual((await resolve(h2, a.did)).pending_operations, []);

      const st = await h2.call('GET', `/registration-status/${reg.did}`);
      assert.equal(st.body.registration_status, 'missing');
      assert.deepEqual(st.body.last_error, { code: 'authorization_expired', message: (st.body.last_error as Body).message });
      assert.equal(st.body.tx_hash, regTx);
      assertError(await h2.call('GET', `/resolve/${reg.did}`), 404, 'did_not_found');
      assert.equal(h2.ledger.pendingEntries().length, 0);
    } finally {
      await h2.close();
    }
  });

  it('keeps a deleted DID deleted (profile platform): registering it again is still 409 did_deleted', async () => {
    const h1 = await startDirectory();
    const a = await registerDid(h1, 1);
    await mutate(h1, a.did, a.key, 'delete_did');
    await h1.close(true);

    const h2 = await startDirectory({ dir: h1.dir, clock: h1.clock });
    try {
      const prepared = await h2.call('POST', '/register-did/prepare', {
        did: a.did,
        root_pubkey: to0x(keyOf(9).publicKey),
        did_document: docOf(a.did, keyOf(9)),
      });
      assertError(prepared, 409, 'did_deleted');
      assertError(await h2.call('POST', '/register-did', clientRegistrationBody(h2, a.did, keyOf(9))), 409, 'did_deleted');
      assert.equal((await h2.call('GET', `/registration-status/${a.did}`)).body.registration_status, 'missing');
    } finally {
      await h2.close();
    }
  });
});
