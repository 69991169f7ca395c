/**
 * The DID lifecycle end to end over real HTTP: a real node (`startNode`), the SDK, keys that never leave the
 * test. Covers both route styles (Directory-prepared payloads and payloads built locally with the shared codec),
 * replays, and a restart on the same data directory.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { DirectoryApiError } from '../../src/client/http.js';
import { didDocumentFor, ed25519VerificationMethod, keyPairFromSeed, x25519KeyAgreement } from '../../src/client/keys.js';
import { generateDid } from '../../src/protocol/did.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { startTestNode, type TestNode } from '../support/network.js';

const seed = (n: number) => new Uint8Array(32).fill(n);

async function rejects(p: Promise<unknown>, status: number, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof DirectoryApiError, `expected DirectoryApiError, got ${String(e)}`);
    assert.equal(e.status, status);
    assert.equal(e.code, code);
    return true;
  });
}

describe('DID lifecycle over HTTP with the SDK', () => {
  let node: TestNode;
  let client: DirectoryClient;
  const key = keyPairFromSeed(seed(21));
  const key2 = keyPairFromSeed(seed(22));
  const newRoot = keyPairFromSeed(seed(23));
  const did = generateDid(PLATFORM, seed(5).slice(0, 16));

  before(async () => {
    node = await startTestNode();
    client = new DirectoryClient(node.urls.directory!);
  });
  after(async () => node.stop());

  it('registers, resolves and reports confirmation', async () => {
    const sub = await client.register({ did, key, didDocument: didDocumentFor(did, key.publicKey), alias: ' Lifecycle ' });
    assert.equal(sub.status, 'accepted');
    await client.waitForTransaction(sub.tx_hash);
    const status = await client.registrationStatus(did);
    assert.equal(status.registration_status, 'confirmed');
    const rec = await client.resolve(did);
    assert.deepEqual(rec.aliases, ['lifecycle']);
    assert.equal(rec.root_pubkey, `0x${Buffer.from(key.publicKey).toString('hex')}`);
    assert.equal(rec.deactivated, false);
  });

  it('adds, updates and removes every document component, alias and device', async () => {
    const vm2 = ed25519VerificationMethod(did, 'k2', key2.publicKey);
    const wait = async (p: Promise<{ tx_hash: string }>) => client.waitForTransaction((await p).tx_hash);
    await wait(client.addVerificationMethod(did, key, 'root', { verification_method: vm2 }));
    await wait(client.addAuthentication(did, key, 'root', { id: vm2.id }));
    await wait(client.addKeyAgreement(did, key, 'root', { key_agreement: x25519KeyAgreement(did, 'x1', seed(30)) }));
    const cache = { id: `${did}#cache`, type: 'PlatformCacheService', serviceEndpoint: ['https://cache.example.com'], authorization: [vm2.id] };
    await wait(client.addService(did, key, 'root', { service: cache }));
    await wait(client.addAlias(did, key, 'root', { alias: 'second' }));
    await wait(client.addDevice(did, key, 'root', { device_id: 'phone/1' }));
    let rec = await client.resolve(did);
    assert.equal(rec.document?.verificationMethod.length, 2);
    assert.deepEqual(rec.document?.authentication, [`${did}#root`, vm2.id]);
    assert.equal(rec.document?.keyAgreement[0]?.id, `${did}#x1`);
    assert.deepEqual(rec.document?.service[0], cache);
    assert.deepEqual(rec.aliases, ['lifecycle', 'second']);
    assert.deepEqual(
      rec.devices.map((d) => d.deviceId),
      ['phone/1'],
    );

    // the second key signs from now on
    await wait(client.updateService(did, key2, vm2.id, { service: { ...cache, priority: 3 } }));
    await wait(client.updateKeyAgreement(did, key2, vm2.id, { key_agreement: x25519KeyAgreement(did, 'x1', seed(31)) }));
    await wait(client.updateAlias(did, key2, vm2.id, { old_alias: 'second', new_alias: 'third' }));
    await wait(client.updateDevice(did, key2, vm2.id, { device_id: 'phone/1', new_device_id: 'phone/2' }));
    await wait(client.tombstoneDevice(did, key2, vm2.id, { device_id: 'phone/2' }));
    rec = await client.resolve(did);
    assert.equal(rec.document?.service[0]?.priority, 3);
    assert.deepEqual(rec.aliases, ['lifecycle', 'third']);
    assert.deepEqual(rec.devices, [{ deviceId: 'phone/2', addedAt: rec.devices[0]!.addedAt, tombstoned: true }]);

    await wait(client.removeService(did, key2, vm2.id, { id: cache.id }));
    await wait(client.removeKeyAgreement(did, key2, vm2.id, { id: `${did}#x1` }));
    await wait(client.removeAlias(did, key2, vm2.id, { alias: 'third' }));
    await wait(client.removeDevice(did, key2, vm2.id, { device_id: 'phone/2' }));
    await rejects(client.removeVerificationMethod(did, key, 'root', { id: vm2.id }), 409, 'verification_method_in_use');
    await wait(client.removeAuthentication(did, key, 'root', { id: vm2.id }));
    await wait(client.removeVerificationMethod(did, key, 'root', { id: vm2.id }));
    rec = await client.resolve(did);
    assert.deepEqual(rec.document?.service, []);
    assert.deepEqual(rec.document?.keyAgreement, []);
    assert.deepEqual(rec.aliases, ['lifecycle']);
    assert.deepEqual(rec.devices, []);
    assert.equal(rec.document?.verificationMethod.length, 1);
  });

  it('accepts a payload built locally with the shared codec, byte for byte', async () => {
    const sub = await client.submitLocal(did, key, 'add_alias', { alias: 'local-built' });
    const tx = await client.waitForTransaction(sub.tx_hash);
    assert.equal(tx.status, 'finalized');
    assert.ok((await client.resolve(did)).aliases.includes('local-built'));
  });

  it('rotates the root key: the old key is refused, the new one signs', async () => {
    const sub = await client.rotateRootKey(did, key, 'root', newRoot.publicKey);
    await client.waitForTransaction(sub.tx_hash);
    assert.equal((await client.resolve(did)).root_pubkey, `0x${Buffer.from(newRoot.publicKey).toString('hex')}`);
    await rejects(client.addAlias(did, key, 'root', { alias: 'old-key' }), 403, 'invalid_signature');
    const ok = await client.addAlias(did, newRoot, 'root', { alias: 'new-key' });
    await client.waitForTransaction(ok.tx_hash);
  });

  it('keeps every DID and nonce across a restart on the same data directory', async () => {
    const before = await client.nonces(did);
    const dir = node.dataDir;
    await node.stop(true);
    node = await startTestNode([], dir);
    client = new DirectoryClient(node.urls.directory!);
    assert.deepEqual(await client.nonces(did), before);
    assert.ok((await client.resolve(did)).aliases.includes('new-key'));
  });

  it('deactivates permanently', async () => {
    const sub = await client.deactivate(did, newRoot, 'root');
    await client.waitForTransaction(sub.tx_hash);
    const rec = await client.resolve(did);
    assert.equal(rec.deactivated, true);
    assert.equal((await client.registrationStatus(did)).registration_status, 'confirmed');
    await rejects(client.addAlias(did, newRoot, 'root', { alias: 'late' }), 409, 'did_deactivated');
  });

  it('deletes a DID, which profile platform never registers again (did_deleted)', async () => {
    const did2 = generateDid(PLATFORM, seed(6).slice(0, 16));
    const k = keyPairFromSeed(seed(40));
    await client.waitForTransaction((await client.register({ did: did2, key: k, didDocument: didDocumentFor(did2, k.publicKey) })).tx_hash);
    await client.waitForTransaction((await client.addDevice(did2, k, 'root', { device_id: 'd' })).tx_hash);
    assert.equal((await client.nonces(did2)).control_nonce, '1');
    await client.waitForTransaction((await client.deleteDid(did2, k, 'root')).tx_hash);
    assert.equal((await client.registrationStatus(did2)).registration_status, 'missing');
    await rejects(client.resolve(did2), 404, 'did_not_found');
    await rejects(client.register({ did: did2, key: k, didDocument: didDocumentFor(did2, k.publicKey) }), 409, 'did_deleted');
    assert.equal((await client.registrationStatus(did2)).registration_status, 'missing');
  });
});
