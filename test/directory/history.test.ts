/**
 * History routes over a real SQLite ledger: a DID's, a persona's and an application's finalized operations,
 * newest first, with block, signer and what changed; cursor pages; a deleted DID's history; every error status.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { assertError, kid, mutate, registerDid, type Reply } from '../support/directory-flows.js';
import { authorize, registerApplication } from '../support/application-flows.js';
import { controlPersona, enc, operatorOf, registerNamed, type Operator } from '../support/persona-flows.js';
import { forwardPlan, policyJson, registerServiceDid, rule, sendRule, target, writeV3 } from '../support/policy-flows.js';

type Body = Record<string, unknown>;
type Entry = Body & { action: string; changes: Body | null; block_number: number; block_index: number; block_hash: string; tx_hash: string };

const entries = (r: Reply): Entry[] => r.body.history as Entry[];

/** Every page of `url`, following `next_cursor` with `limit`. */
async function allPages(h: DirectoryHarness, url: string, limit: number): Promise<{ pages: Entry[][]; cursors: string[] }> {
  const pages: Entry[][] = [];
  const cursors: string[] = [];
  let cursor: string | null = null;
  do {
    const res: Reply = await h.call('GET', `${url}?limit=${limit}${cursor === null ? '' : `&cursor=${enc(cursor)}`}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    pages.push(entries(res));
    cursor = res.body.next_cursor as string | null;
    if (cursor !== null) cursors.push(cursor);
  } while (cursor !== null);
  return { pages, cursors };
}

describe('history', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  it("a DID's operations, newest first, with block, tx, signer and what changed; still readable once deleted", async () => {
    const r = await registerDid(h, 11, { alias: 'hist11' });
    const url = `/dids/${enc(r.did)}/history`;
    await mutate(h, r.did, r.key, 'add_device', { device_id: 'phone' });
    const service = { id: kid(r.did, 'inbox'), type: 'PlatformRelayService', serviceEndpoint: ['https://relay.example/inbox'] };
    await mutate(h, r.did, r.key, 'AddService', { service });
    await mutate(h, r.did, r.key, 'update_alias', { old_alias: 'hist11', new_alias: 'hist11b' });
    // In the pool only: not final, not history.
    await mutate(h, r.did, r.key, 'remove_device', { device_id: 'phone' }, { pending: true });

    const res = await h.call('GET', url);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.did, r.did);
    assert.equal(res.body.next_cursor, null);
    const list = entries(res);
    assert.deepEqual(
      list.map((e) => e.action),
      ['update_alias', 'AddService', 'add_device', 'register_did'],
    );
    assert.deepEqual(
      list.map((e) => e.extrinsic),
      ['update_alias', 'add_service', 'apply_control_with_proof', 'register_with_proof_v2'],
    );
    const [alias, svc, device, reg] = list as [Entry, Entry, Entry, Entry];
    assert.deepEqual(alias.changes, { old_alias: 'hist11', new_alias: 'hist11b' });
    assert.deepEqual(svc.changes, { service });
    assert.deepEqual(device.changes, { operation: 'AddDevice', device_id: 'phone' });
    assert.equal(reg.signer_key_id, null, 'the root key signs a registration');
    assert.equal((reg.changes as Body).alias, 'hist11');
    assert.match((reg.changes as Body).root_pubkey as string, /^0x[0-9a-f]{64}$/);
    assert.match((reg.changes as Body).document_hash as string, /^0x[0-9a-f]{64}$/);
    for (const e of [alias, svc, device]) assert.equal(e.signer_key_id, 'root');
    for (const e of list) {
      const block = await h.call('GET', `/blocks/${e.block_number}`);
      assert.equal(e.block_hash, block.body.hash);
      assert.equal(e.timestamp, block.body.timestamp);
      assert.equal(e.timestamp_iso, block.body.timestamp_iso);
      assert.ok((block.body.extrinsics as Body[]).some((x) => x.tx_hash === e.tx_hash));
      assert.equal((await h.call('GET', `/transactions/${e.tx_hash}`)).body.status, 'finalized');
    }

    h.settle();
    await mutate(h, r.did, r.key, 'delete_did');
    assert.equal((await h.call('GET', `/resolve/${enc(r.did)}`)).status, 404);
    const afterDelete = entries(await h.call('GET', url));
    assert.deepEqual(
      afterDelete.slice(0, 2).map((e) => e.changes),
      [{ operation: 'DeleteDid' }, { operation: 'RemoveDevice', device_id: 'phone' }],
    );
    assert.equal(afterDelete.length, 6);
  });

  it('pages through an opaque cursor without gaps or repeats; a cursor past the end gives an empty last page', async () => {
    const r = await registerDid(h, 12);
    for (let i = 0; i < 6; i++) await mutate(h, r.did, r.key, 'add_alias', { alias: `page12x${i}` }, { pending: i % 2 === 0 });
    h.settle();
    const url = `/dids/${enc(r.did)}/history`;
    const whole = entries(await h.call('GET', `${url}?limit=100`));
    assert.equal(whole.length, 7);
    const { pages, cursors } = await allPages(h, url, 3);
    assert.deepEqual(
      pages.map((p) => p.length),
      [3, 3, 1],
    );
    assert.deepEqual(pages.flat(), whole);
    for (const c of cursors) assert.doesNotMatch(c, /[^A-Za-z0-9_-]/, 'URL-safe');
    // two operations in one block keep their order in the block
    const sameBlock = whole.filter((e) => e.block_number === whole[1]!.block_number);
    assert.ok(sameBlock.length === 2 && sameBlock[0]!.block_index > sameBlock[1]!.block_index);
    // the default page is 20
    assert.equal(entries(await h.call('GET', url)).length, 7);
  });

  it("a persona's operations (its policy included) and an application's; policies of another scope kind stay out", async () => {
    const op: Operator = await operatorOf(h, 13);
    const relay = await registerServiceDid(h, 14, [{ fragment: 'relay', kind: 'Relay' }]);
    await registerNamed(h, 'histshop', op);
    await writeV3(h, op.key, 'persona', 'histshop', {
      action: 'set_policy_v3',
      policy: policyJson('PERSONA', 'histshop', op.did, [rule('r1', 1, forwardPlan([target(relay, 'relay')]))]),
    });
    await controlPersona(h, 'histshop', op, { action: 'revoke_persona' });
    const p = await h.call('GET', '/personas/HistShop/history');
    assert.equal(p.status, 200, JSON.stringify(p.body));
    assert.equal(p.body.persona, 'histshop');
    const pe = entries(p);
    assert.deepEqual(
      pe.map((e) => e.extrinsic),
      ['apply_persona_with_proof', 'apply_policy_v3_with_proof', 'apply_persona_with_proof'],
    );
    assert.deepEqual(
      pe.map((e) => (e.changes as Body).operation),
      ['Revoke', 'SetPolicy', 'RegisterNamed'],
    );
    assert.deepEqual((pe[1]!.changes as Body).scope, { type: 'PERSONA', id: 'histshop' });
    assert.equal((pe[2]!.changes as Body).operator_did, op.did);

    // An application with the persona's name: each history keeps to its own subject.
    await registerApplication(h, 'histshop', op);
    await writeV3(h, op.key, 'application', 'histshop', {
      action: 'set_policy_v3',
      policy: policyJson('APPLICATION', 'histshop', op.did, [sendRule('ev', op.did)]),
    });
    await authorize(h, 'histshop', { action: 'set_status', status: 'suspended' }, op.key);
    await authorize(h, 'histshop', { action: 'set_status', status: 'active' }, op.key);
    const a = await h.call('GET', '/applications/histshop/history');
    assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.equal(a.body.application_id, 'histshop');
    const ae = entries(a);
    assert.deepEqual(
      ae.map((e) => e.extrinsic),
      ['set_application_status', 'set_application_status', 'apply_policy_v3_with_proof', 'register_application'],
    );
    assert.deepEqual(
      ae.map((e) => e.changes),
      [
        { status: 'active' },
        { status: 'suspended' },
        { operation: 'SetPolicy', policy_version: 3, scope: { type: 'APPLICATION', id: 'histshop' }, operator_did: op.did },
        { control_did: op.did, status: 'active' },
      ],
    );
    for (const e of ae) assert.equal(e.signer_key_id, 'root');
    assert.equal(entries(await h.call('GET', '/personas/histshop/history')).length, 3, "the application policy is not the persona's");
  });

  it("answers 404 with the subject's not-found code, 400 for bad parameters, changing nothing", async () => {
    const r = await registerDid(h, 15);
    const url = `/dids/${enc(r.did)}/history`;
    assertError(await h.call('GET', `/dids/${enc('did:platform:' + 'z'.repeat(20))}/history`), 404, 'did_not_found');
    const pending = await registerDid(h, 16, { pending: true });
    assertError(await h.call('GET', `/dids/${enc(pending.did)}/history`), 404, 'did_not_found');
    h.settle();
    assertError(await h.call('GET', '/dids/not-a-did/history'), 400, 'invalid_did');
    assertError(await h.call('GET', '/personas/nobody-here/history'), 404, 'persona_not_found');
    assertError(await h.call('GET', `/personas/${enc('bad persona!')}/history`), 400, 'invalid_persona');
    assertError(await h.call('GET', '/applications/no.such.app/history'), 404, 'application_not_found');
    assertError(await h.call('GET', `/applications/${enc('Bad App')}/history`), 400, 'invalid_application_id');
    for (const q of ['limit=0', 'limit=101', 'limit=ten', 'limit=-1', 'limit=1.5']) {
      const res = await h.call('GET', `${url}?${q}`);
      assertError(res, 400, 'invalid_request');
      assert.equal((res.body.details as Body).field, 'limit');
    }
    for (const c of ['garbage!', Buffer.from('1.x').toString('base64url'), Buffer.from('12').toString('base64url'), 'A'.repeat(60)]) {
      const res = await h.call('GET', `${url}?cursor=${enc(c)}`);
      assertError(res, 400, 'invalid_request');
      assert.equal((res.body.details as Body).field, 'cursor');
    }
    // a well-formed cursor older than everything: an empty page of a known DID, a 404 for an unknown one
    const past = Buffer.from('0.0').toString('base64url');
    const empty = await h.call('GET', `${url}?cursor=${past}`);
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.body, { did: r.did, history: [], next_cursor: null });
    assertError(await h.call('GET', `/dids/${enc('did:platform:' + 'y'.repeat(20))}/history?cursor=${past}`), 404, 'did_not_found');
    assert.equal(entries(await h.call('GET', url)).length, 1);
  });
});
