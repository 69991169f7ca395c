/**
 * A DID's whole life through the Directory (http-api.md §4, §5, §5.3): register, add every component, update and
 * remove each, rotate the root key, deactivate; and register → delete → register again.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { to0x } from '../../src/base/bytes.js';
import { ERROR_STATUS } from '../../src/base/errors.js';
import { ledgerError } from '../../src/directory/ledger-errors.js';
import { LedgerFailure } from '../../src/ledger/errors.js';
import { multibaseEd25519 } from '../../src/protocol/keys.js';
import { metaOf, registerCall } from '../ledger/harness.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import {
  ALL_ACTIONS,
  assertAccepted,
  assertError,
  clientRegistrationBody,
  docOf,
  kaOf,
  keyOf,
  kid,
  localSubmission,
  mutate,
  nonces,
  prepare,
  prepareSigned,
  registerDid,
  resolve,
  signHex,
  submit,
  vmOf,
} from '../support/directory-flows.js';

type Body = Record<string, unknown>;

/** Fields that are valid for every action on the lifecycle DID (used to show every change is refused). */
function anyFields(did: string): Record<string, Body> {
  const k = keyOf(77);
  return {
    add_alias: { alias: 'after' },
    update_alias: { old_alias: 'life', new_alias: 'after' },
    remove_alias: { alias: 'life' },
    add_device: { device_id: 'd' },
    update_device: { device_id: 'd', new_device_id: 'e' },
    remove_device: { device_id: 'd' },
    tombstone_device: { device_id: 'd' },
    deactivate_did: {},
    delete_did: {},
    UpdateRootPubkey: { new_root_pubkey: to0x(k.publicKey) },
    AddVerificationMethod: { verification_method: vmOf(did, 'x', k) },
    UpdateVerificationMethod: { verification_method: vmOf(did, 'key-1', k) },
    RemoveVerificationMethod: { id: kid(did, 'key-1') },
    AddAuthentication: { id: kid(did, 'key-1') },
    RemoveAuthentication: { id: kid(did, 'key-1') },
    AddKeyAgreement: { key_agreement: kaOf(did, 'x', 7) },
    UpdateKeyAgreement: { key_agreement: kaOf(did, 'x', 7) },
    RemoveKeyAgreement: { id: kid(did, 'x') },
    AddService: { service: { id: kid(did, 'x'), type: 'T', serviceEndpoint: 'https://x' } },
    UpdateService: { service: { id: kid(did, 'x'), type: 'T', serviceEndpoint: 'https://x' } },
    RemoveService: { id: kid(did, 'x') },
    replace_document: { document: { id: did } },
  };
}

describe('DID lifecycle: register → components → updates → removals → root rotation → deactivation', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  it('runs the whole life of a DID', async () => {
    const r = await registerDid(h, 1, { alias: 'Life' });
    const did = r.did;
    const root1 = r.key;
    const key2 = keyOf(2);
    const key3 = keyOf(3);

    // ---- add one of each
    await mutate(h, did, root1, 'AddVerificationMethod', { verification_method: vmOf(did, 'key-2', key2) });
    await mutate(h, did, root1, 'AddAuthentication', { id: kid(did, 'key-2') });
    await mutate(h, did, root1, 'AddKeyAgreement', { key_agreement: kaOf(did, 'ka-1', 1) });
    const relay = {
      id: kid(did, 'relay'),
      type: 'PlatformRelayService',
      serviceEndpoint: ['https://relay.example'],
      authorization: [kid(did, 'key-2')],
      priority: 5,
    };
    await mutate(h, did, root1, 'AddService', { service: relay });
    await mutate(h, did, root1, 'add_alias', { alias: 'life-2' });
    await mutate(h, did, root1, 'add_device', { device_id: 'phone' });
    let rec = await resolve(h, did);
    assert.equal(rec.version, 7);
    assert.deepEqual(rec.aliases, ['life', 'life-2']);
    assert.deepEqual(
      (rec.devices as Body[]).map((d) => d.deviceId),
      ['phone'],
    );
    assert.deepEqual(rec.document, {
      id: did,
      verificationMethod: [vmOf(did, 'key-1', root1), vmOf(did, 'key-2', key2)],
      authentication: [kid(did, 'key-1'), kid(did, 'key-2')],
      keyAgreement: [kaOf(did, 'ka-1', 1)],
      service: [relay],
    });
    assert.deepEqual(await nonces(h, did), { ...(await nonces(h, did)), alias_nonce: '1', document_nonce: '4', control_nonce: '1', root_pubkey_nonce: '0' });

    // ---- a VM key signs, too (any VM whose controller is the DID)
    const byVm = await prepareSigned(h, did, key2, 'UpdateVerificationMethod', {
      verification_method: vmOf(did, 'key-2', key3),
      signer_key_id: kid(did, 'key-2'),
    });
    assert.equal(byVm.request.signer_key_id, kid(did, 'key-2'));
    assertAccepted(await submit(h, byVm));
    h.settle();
    // key-2 now holds key3: the old key2 no longer signs under that id
    const stale = await prepareSigned(h, did, key2, 'add_alias', { alias: 'nope', signer_key_id: kid(did, 'key-2') });
    assertError(await submit(h, stale), 403, 'invalid_signature');

    // ---- update each
    await mutate(h, did, key3, 'UpdateKeyAgreement', { key_agreement: kaOf(did, 'ka-1', 2), signer_key_id: kid(did, 'key-2') });
    const relay2 = { id: relay.id, type: 'PlatformRelayService', serviceEndpoint: ['https://relay2.example'] };
    await mutate(h, did, root1, 'UpdateService', { service: relay2 });
    await mutate(h, did, root1, 'update_alias', { old_alias: 'life-2', new_alias: 'life-3' });
    await mutate(h, did, root1, 'update_device', { device_id: 'phone', new_device_id: 'phone-2' });
    await mutate(h, did, root1, 'tombstone_device', { device_id: 'phone-2' });
    rec = await resolve(h, did);
    assert.deepEqual(rec.aliases, ['life', 'life-3']);
    assert.deepEqual(rec.devices, [{ deviceId: 'phone-2', addedAt: (rec.devices as Body[])[0]!.addedAt, tombstoned: true }]);
    assert.deepEqual((rec.document as Body).keyAgreement, [kaOf(did, 'ka-1', 2)]);
    assert.deepEqual((rec.document as Body).service, [relay2]);
    assert.deepEqual((rec.document as Body).verificationMethod, [vmOf(did, 'key-1', root1), vmOf(did, 'key-2', key3)]);

    // ---- remove each
    assertError(await prepare(h, did, 'RemoveVerificationMethod', { id: kid(did, 'key-2') }), 409, 'verification_method_in_use');
    await mutate(h, did, root1, 'RemoveAuthentication', { id: kid(did, 'key-2') });
    await mutate(h, did, root1, 'RemoveVerificationMethod', { id: kid(did, 'key-2') });
    await mutate(h, did, root1, 'RemoveKeyAgreement', { id: kid(did, 'ka-1') });
    await mutate(h, did, root1, 'RemoveService', { id: relay.id });
    await mutate(h, did, root1, 'remove_alias', { alias: 'life-3' });
    await mutate(h, did, root1, 'remove_device', { device_id: 'phone-2' });
    rec = await resolve(h, did);
    assert.deepEqual(rec.aliases, ['life']);
    assert.deepEqual(rec.devices, []);
    assert.deepEqual(rec.document, {
      id: did,
      verificationMethod: [vmOf(did, 'key-1', root1)],
      authentication: [kid(did, 'key-1')],
      keyAgreement: [],
      service: [],
    });
    assertError(await h.call('GET', '/aliases/life-3'), 404, 'alias_not_found');
    const versionBeforeRotation = rec.version as number;
    assert.equal(versionBeforeRotation, 19);

    // ---- rotate the root key; the next change must be signed with the new one
    const root2 = keyOf(4);
    const rot = await mutate(h, did, root1, 'UpdateRootPubkey', { new_root_pubkey: multibaseEd25519(root2.publicKey) });
    assert.equal(rot.request.new_root_pubkey, to0x(root2.publicKey), 'normalised to 0x hex');
    rec = await resolve(h, did);
    assert.equal(rec.root_pubkey, to0x(root2.publicKey));
    assert.equal((await nonces(h, did)).root_pubkey_nonce, '1');
    const old = await prepareSigned(h, did, root1, 'add_alias', { alias: 'rotated' });
    const refused = await submit(h, old);
    assertError(refused, 403, 'invalid_signature');
    assertAccepted(await submit(h, { ...old, body: { ...old.request, signature: signHex(root2, old.prepared.payload_to_sign as string) } }));
    h.settle();
    assert.deepEqual((await resolve(h, did)).aliases, ['life', 'rotated']);
    // VM key-1 still holds the old key and keeps signing (ledger-rules.md §5.3: VMs are not touched)
    await mutate(h, did, root1, 'add_device', { device_id: 'by-old-vm', signer_key_id: kid(did, 'key-1') });
    // the replacement names the signer's current key in `pubkey`
    const repl = await prepareSigned(h, did, root2, 'replace_document', { document: { id: did, verificationMethod: [vmOf(did, 'key-1', root2)] } });
    assert.equal(repl.request.pubkey, to0x(root2.publicKey));
    assertError(await submit(h, repl, { ...repl.body, pubkey: to0x(root1.publicKey) }), 403, 'signer_not_authorized');
    assertAccepted(await submit(h, repl));
    h.settle();

    // ---- deactivate
    const deact = await mutate(h, did, root2, 'deactivate_did');
    assert.equal(deact.submitted.extrinsic, 'apply_control_with_proof');
    rec = await resolve(h, did);
    assert.equal(rec.deactivated, true);
    assert.deepEqual(rec.aliases, ['life', 'rotated'], 'the record is kept');
    const st = await h.call('GET', `/registration-status/${did}`);
    assert.equal(st.body.registration_status, 'confirmed');
    assert.equal(st.body.deactivated, true);
    assert.equal(st.body.version, rec.version);
    assert.equal((await h.call('GET', `/dids/${did}/nonces`)).status, 200);

    // every later change: 409 did_deactivated, at prepare and at submit
    const n = await nonces(h, did);
    const fields = anyFields(did);
    for (const action of ALL_ACTIONS) {
      assertError(await prepare(h, did, action, fields[action]), 409, 'did_deactivated');
      const domain = action.endsWith('_alias')
        ? 'alias_nonce'
        : action.endsWith('_device') || action.endsWith('_did')
          ? 'control_nonce'
          : action === 'UpdateRootPubkey'
            ? 'root_pubkey_nonce'
            : 'document_nonce';
      const sub = localSubmission(h.profile, did, root2, action, fields[action], {
        nonce: BigInt(n[domain] as string),
        validUntil: BigInt(h.clock.nowMs() + 60_000),
      });
      assertError(await h.call(sub.route.method, sub.route.url, sub.body), 409, 'did_deactivated');
    }
    assert.equal((await resolve(h, did)).version, rec.version, 'nothing changed');
    assert.equal((await h.call('GET', `/registration-status/${did}`)).body.registration_status, 'confirmed');
  });
});

/** Registers seed `seed` with aliases, a device and a service, deletes it and settles; the deleted DID. */
async function registerThenDelete(h: DirectoryHarness, seed: number) {
  const r = await registerDid(h, seed, { alias: `gone${seed}` });
  // signed before the deletion: one submitted (captured on the wire, nonce 0), one signed but never submitted
  const captured = await mutate(h, r.did, r.key, 'add_alias', { alias: `gone${seed}-2` });
  await mutate(h, r.did, r.key, 'add_device', { device_id: 'd' });
  await mutate(h, r.did, r.key, 'AddService', { service: { id: kid(r.did, 's'), type: 'T', serviceEndpoint: 'https://s' } });
  await mutate(h, r.did, r.key, 'add_alias', { alias: `kept${seed}` });
  const unsent = await prepareSigned(h, r.did, r.key, 'add_alias', { alias: `late${seed}` });
  const del = await mutate(h, r.did, r.key, 'delete_did', {}, { pending: true });
  assert.equal(del.route.method, 'DELETE');
  // still confirmed while the deletion is pending
  assert.equal((await h.call('GET', `/registration-status/${r.did}`)).body.registration_status, 'confirmed');
  assert.equal((await resolve(h, r.did)).deactivated, false);
  h.settle();

  assert.deepEqual((await h.call('GET', `/registration-status/${r.did}`)).body, { did: r.did, registration_status: 'missing', version: 0, deactivated: false });
  assertError(await h.call('GET', `/resolve/${r.did}`), 404, 'did_not_found');
  assertError(await h.call('GET', `/dids/${r.did}/nonces`), 404, 'did_not_found');
  assertError(await h.call('GET', `/aliases/gone${seed}`), 404, 'alias_not_found');
  assertError(await h.call('GET', `/aliases/gone${seed}-2`), 404, 'alias_not_found');
  assertError(await prepare(h, r.did, 'add_alias', { alias: 'x' }), 404, 'did_not_found');
  assert.equal((await h.call('GET', `/transactions/${del.submitted.tx_hash}`)).body.status, 'finalized');
  return { ...r, captured, unsent };
}

describe('DID lifecycle: register → delete (profile platform: never registered again)', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  it('deletes the record, its aliases and nonces; registering the DID again is 409 did_deleted at prepare and submit', async () => {
    const r = await registerThenDelete(h, 1);
    // a stranger (key 9), and the owner with the old key, are both refused
    const prepared = await h.call('POST', '/register-did/prepare', { did: r.did, root_pubkey: to0x(keyOf(9).publicKey), did_document: docOf(r.did, keyOf(9)) });
    assertError(prepared, 409, 'did_deleted');
    assert.equal(prepared.body.details && (prepared.body.details as Body).did, r.did);
    assertError(await h.call('POST', '/register-did', clientRegistrationBody(h, r.did, keyOf(9))), 409, 'did_deleted');
    assertError(await h.call('POST', '/register-did', clientRegistrationBody(h, r.did, r.key)), 409, 'did_deleted');
    // straight into the pool, past the Directory's checks: the ledger's own rule, reported as did_deleted
    const direct = registerCall(r.did, keyOf(9), { expiryMs: BigInt(h.clock.nowMs() + 60_000) });
    assert.throws(
      () => h.ledger.submit(direct, metaOf(direct)),
      (e: unknown) => e instanceof LedgerFailure && e.errorName === 'DidDeleted' && ledgerError(e).code === 'did_deleted' && ERROR_STATUS.did_deleted === 409,
    );
    // deployed pollers still read `missing`, never a 404 or a new status
    assert.deepEqual((await h.call('GET', `/registration-status/${r.did}`)).body, {
      did: r.did,
      registration_status: 'missing',
      version: 0,
      deactivated: false,
    });
    assertError(await h.call('GET', `/resolve/${r.did}`), 404, 'did_not_found');
    // the deleted DID's aliases are free for other DIDs
    const other = await registerDid(h, 4, { alias: 'gone1-2' });
    assert.deepEqual((await h.call('GET', '/aliases/gone1-2')).body, { alias: 'gone1-2', did: other.did });
  });

  it('a deactivated DID can never be deleted', async () => {
    const r = await registerDid(h, 2);
    await mutate(h, r.did, r.key, 'deactivate_did');
    assertError(await prepare(h, r.did, 'delete_did'), 409, 'did_deactivated');
    assert.equal((await resolve(h, r.did)).deactivated, true);
  });

  it('a DID whose deletion is pending refuses further changes with did_not_found', async () => {
    const r = await registerDid(h, 3);
    await mutate(h, r.did, r.key, 'delete_did', {}, { pending: true });
    assertError(await prepare(h, r.did, 'add_alias', { alias: 'late' }), 404, 'did_not_found');
    h.settle();
  });
});

describe('DID lifecycle: register → delete → register again (profile openpayload)', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory({ profile: 'openpayload' });
  });
  after(() => h.close());

  it('registers the DID again; no payload signed before the deletion verifies after it', async () => {
    const r = await registerThenDelete(h, 1);
    // registered again, with another key; the old alias is free again
    const again = await registerDid(h, 1, { key: keyOf(9), alias: 'gone1-2' });
    const rec = await resolve(h, r.did);
    assert.equal(rec.version, 1);
    assert.equal(rec.root_pubkey, to0x(keyOf(9).publicKey));
    assert.deepEqual(rec.aliases, ['gone1-2']);
    assert.deepEqual(rec.devices, []);
    assert.equal(rec.tx_id, again.submitted.tx_hash);
    // the nonces continue one past where they were (alias: 0 and 1 used, 2 signed → 3; document, control: 1 → 2)
    const n = await nonces(h, r.did);
    assert.equal(n.alias_nonce, '3');
    assert.equal(n.document_nonce, '2');
    assert.equal(n.control_nonce, '2');
    assert.equal(n.root_pubkey_nonce, '1');
    // the old key is not a key of the new registration
    const p = await prepareSigned(h, r.did, r.key, 'add_alias', { alias: 'x' });
    assertError(await submit(h, p), 403, 'invalid_signature');
    await mutate(h, r.did, keyOf(9), 'add_alias', { alias: 'x' });
    assert.deepEqual((await resolve(h, r.did)).aliases, ['gone1-2', 'x']);
  });

  it('refuses a captured pre-deletion payload after the owner registers the same DID with the same key again', async () => {
    const r = await registerThenDelete(h, 2);
    await registerDid(h, 2);
    // the captured payload carries alias nonce 0, where a DID registered afresh would start
    assert.equal((r.captured.body as Body).nonce, '0');
    assertError(await submit(h, r.captured), 409, 'nonce_mismatch');
    assertError(await submit(h, r.unsent), 409, 'nonce_mismatch');
    assert.deepEqual((await resolve(h, r.did)).aliases, []);
  });
});
