/**
 * The Directory's read routes for the explorer (docs/explorer.md): `GET /overview` (counts folded from the export
 * feed, latest operations with their subject, latest blocks), `GET /search` (every kind a query names, 200 when
 * none), `GET /policies/{scope}/{id}` (v3, else v2, else none) and the subject of each operation of a block; every
 * error status with its code.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { to0x } from '../../src/base/bytes.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { assertError, mutate, registerDid, registerFixture, type Fixture } from '../support/directory-flows.js';
import { registerApplication } from '../support/application-flows.js';
import { operatorOf, registerNamed, type Operator } from '../support/persona-flows.js';
import { policyJson, registerServiceDid, rule, target, writeV3 } from '../support/policy-flows.js';

type Json = Record<string, unknown>;

describe('explorer reads', () => {
  let h: DirectoryHarness;
  let fx: Fixture;
  let op: Operator;
  let gone: string;

  before(async () => {
    h = await startDirectory();
    fx = await registerFixture(h, 70);
    op = await operatorOf(h, 71);
    await registerNamed(h, 'readershop', op);
    await registerApplication(h, 'reader.app', op);
    const relay = await registerServiceDid(h, 72, [{ fragment: 'relay', kind: 'Relay' }]);
    const plan = {
      type: 'DeliveryPlan/v1',
      entry_step: 'fwd',
      steps: [{ id: 'fwd', operation: 'Forward', targets: [target(relay, 'relay')] }],
      transitions: [],
    };
    await writeV3(h, op.key, 'persona', 'readershop', {
      action: 'set_policy_v3',
      policy: policyJson('PERSONA', 'readershop', op.did, [rule('only', 1, plan)]),
    });
    const deleted = await registerDid(h, 73);
    await mutate(h, deleted.did, deleted.key, 'delete_did');
    gone = deleted.did;
    h.settle();
  });
  after(() => h?.close());

  it('GET /overview counts what the finalized ledger holds and lists its latest operations and blocks, newest first', async () => {
    const r = await h.call('GET', '/overview');
    assert.equal(r.status, 200);
    const counts = r.body.counts as Json;
    // the fixture, the operator, the service DID; the deleted one counted apart
    assert.deepEqual(
      { dids: counts.dids, deleted_dids: counts.deleted_dids, personas: counts.personas, applications: counts.applications },
      {
        dids: 3,
        deleted_dids: 1,
        personas: 1,
        applications: 1,
      },
    );
    assert.equal(r.body.finalized_number, h.ledger.finalizedRefNow().number);
    const ops = r.body.recent_operations as Json[];
    assert.equal(ops.length, Math.min(10, counts.operations as number));
    assert.deepEqual(
      ops.slice(0, 3).map((o) => [o.action, o.subject, o.subject_kind, o.success]),
      [
        ['delete_did', gone, 'did', true],
        ['register_did', gone, 'did', true],
        ['set_policy_v3', 'readershop', 'persona', true],
      ],
    );
    const positions = ops.map((o) => Number(o.block_number) * 1000 + Number(o.block_index));
    assert.deepEqual(
      positions,
      [...positions].sort((a, b) => b - a),
      'newest first',
    );
    const blocks = r.body.recent_blocks as Json[];
    assert.equal(blocks[0]!.number, h.ledger.finalizedRefNow().number);
    assert.equal(blocks.length, Math.min(10, h.ledger.finalizedRefNow().number + 1));
    for (const b of blocks) {
      const full = h.ledger.block(Number(b.number))!;
      assert.deepEqual([b.hash, b.operations], [to0x(full.block.hash), full.txs.length], `block ${String(b.number)}`);
    }
    // the tally reads the feed as summaries: the same entries as the feed, without the bytes
    const feed = h.ledger.finalizedFeed(0, 100_000);
    assert.ok(feed.length > 0);
    assert.deepEqual(
      h.ledger
        .finalizedFeedSummary(0, 100_000)
        .map((e) => [e.seq, e.blockNumber, e.tx?.blockIndex, e.tx?.txHash, e.tx?.extrinsic, e.tx?.status, e.tx?.action, e.tx?.subject]),
      feed.map((e) => [e.seq, e.blockNumber, e.tx?.blockIndex, e.tx?.txHash, e.tx?.extrinsic, e.tx?.status, e.tx?.meta.action, e.tx?.meta.subject]),
    );

    const two = await h.call('GET', '/overview?limit=2');
    assert.equal((two.body.recent_operations as Json[]).length, 2);
    assert.equal((two.body.recent_blocks as Json[]).length, 2);
    assert.equal((two.body.counts as Json).operations, counts.operations, 'a second request only adds what is new');
  });

  it('GET /overview counts operations finalized after the first request', async () => {
    const before = ((await h.call('GET', '/overview')).body.counts as Json).dids as number;
    await registerDid(h, 74);
    h.settle();
    const after = await h.call('GET', '/overview?limit=1');
    assert.equal((after.body.counts as Json).dids, before + 1);
    assert.equal(((after.body.recent_operations as Json[])[0] as Json).action, 'register_did');
  });

  it('GET /overview refuses a limit outside 1–100 (400 invalid_request)', async () => {
    for (const limit of ['0', '101', 'x', '-1']) assertError(await h.call('GET', `/overview?limit=${limit}`), 400, 'invalid_request');
  });

  it('GET /search finds each kind a query names, and answers 200 with no hits for a name nothing has', async () => {
    const kinds = async (q: string) => ((await h.call('GET', `/search?q=${encodeURIComponent(q)}`)).body.hits as Json[]).map((x) => [x.kind, x.id]);
    assert.deepEqual(await kinds(fx.did), [['did', fx.did]]);
    assert.deepEqual(await kinds(gone), [['did', gone]], 'a deleted DID still has its history');
    assert.deepEqual(await kinds(fx.alias), [['alias', fx.did]]);
    assert.deepEqual(await kinds('readershop'), [['persona', 'readershop']]);
    assert.deepEqual(await kinds('reader.app'), [['application', 'reader.app']]);
    assert.deepEqual(await kinds('1'), [['block', '1']]);
    const tx = h.ledger.block(1)!.txs[0]!.txHash;
    assert.deepEqual(await kinds(tx.toUpperCase().replace('0X', '0x')), [['transaction', tx]]);
    const none = await h.call('GET', '/search?q=nothing-here');
    assert.equal(none.status, 200);
    assert.deepEqual(none.body, { query: 'nothing-here', hits: [] });
    assert.deepEqual(await kinds('999999'), [], 'a block past the head');
  });

  it('GET /search refuses a missing, empty or overlong query (400 invalid_request)', async () => {
    for (const url of ['/search', '/search?q=', '/search?q=%20', `/search?q=${'a'.repeat(301)}`]) assertError(await h.call('GET', url), 400, 'invalid_request');
  });

  it('GET /policies/{scope}/{id}: the v3 policy, or none (200), whatever the subject; 404 for an unknown subject', async () => {
    const persona = await h.call('GET', '/policies/persona/readershop');
    assert.equal(persona.status, 200);
    assert.equal(persona.body.version, 3);
    assert.equal((persona.body.policy as Json).revision, 1);
    for (const [scope, id] of [
      ['did', fx.did],
      ['application', 'reader.app'],
    ]) {
      const r = await h.call('GET', `/policies/${scope}/${encodeURIComponent(id!)}`);
      assert.equal(r.status, 200, `${scope} ${id}`);
      assert.deepEqual([r.body.version, r.body.policy], [null, null]);
    }
    assertError(await h.call('GET', `/policies/did/${encodeURIComponent(gone)}`), 404, 'did_not_found');
    assertError(await h.call('GET', '/policies/persona/nobody'), 404, 'persona_not_found');
    assertError(await h.call('GET', '/policies/application/no.app'), 404, 'application_not_found');
    assertError(await h.call('GET', '/policies/application/Bad%20App'), 400, 'invalid_application_id');
    assertError(await h.call('GET', '/policies/tag/x'), 400, 'invalid_request');
  });

  it('GET /policies/v3/{scope}/ with its id missing or empty: 404 not_found, as any route missing a segment', async () => {
    for (const path of [
      '/policies/v3/did',
      '/policies/v3/did/',
      '/policies/v3/persona/',
      '/policies/v3/application',
      '/policies/v3/did//',
      '/policies/v3/did//nonce',
    ]) {
      assertError(await h.call('GET', path), 404, 'not_found');
    }
    assertError(await h.call('GET', '/resolve/'), 404, 'not_found');
    assert.equal((await h.call('GET', '/policies/v3/persona/readershop')).status, 200, 'the v3 route itself');
  });

  it("GET /blocks/{n} names each operation's action and subject", async () => {
    const n = h.ledger.finalizedRefNow().number;
    let found: Json | undefined;
    for (let i = 1; i <= n && found === undefined; i++) {
      const b = await h.call('GET', `/blocks/${i}`);
      found = (b.body.extrinsics as Json[]).find((x) => x.action === 'register_named_persona');
    }
    assert.deepEqual(found && [found.subject, found.subject_kind], ['readershop', 'persona']);
  });
});
