/** The pure parts of plan execution (http-api.md §10.4.2) and the Relay's policy cache (§10.3 step 9). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/base/clock.js';
import type { DeliveryView, DirectoryPort } from '../../src/ports/directory-port.js';
import { walkPlan, type PlanEdge } from '../../src/protocol/plan-graph.js';
import { priorityOrder, weightedOrder } from '../../src/relay/plan/targets.js';
import { PolicyCachingDirectory } from '../../src/relay/policy-cache.js';

const edge = (from: string, to: string, trigger: PlanEdge['trigger'] = 'Success', mode: PlanEdge['mode'] = 'Next'): PlanEdge => ({ from, to, trigger, mode });

describe('plan walk', () => {
  const runner = (fails: string[], handoff: string[] = []) => {
    const ran: string[] = [];
    return {
      ran,
      run: async (id: string) => {
        ran.push(id);
        return { ok: !fails.includes(id), handedOff: handoff.includes(id) };
      },
    };
  };

  it('follows Success and Failure edges; a Failure edge to a fallback that succeeds makes the plan succeed', async () => {
    const edges = [edge('a', 'b'), edge('a', 'fallback', 'Failure')];
    const failing = runner(['a']);
    const w = await walkPlan(edges, 'a', failing.run);
    assert.deepEqual(failing.ran, ['a', 'fallback']);
    assert.equal(w.ok, true);
    const ok = runner([]);
    assert.equal((await walkPlan(edges, 'a', ok.run)).ok, true);
    assert.deepEqual(ok.ran, ['a', 'b']);
  });

  it('runs Fork branches in transition order; the plan fails when any branch ends in Failure', async () => {
    const edges = [edge('a', 'b', 'Always', 'Fork'), edge('a', 'c', 'Success'), edge('b', 'd'), edge('c', 'd')];
    const r = runner(['b']);
    const w = await walkPlan(edges, 'a', r.run);
    assert.deepEqual(r.ran, ['a', 'b', 'c', 'd'], 'd reached twice runs once');
    assert.equal(w.ok, false);
    assert.deepEqual(w.failedLeaves, ['b']);
  });

  it('stops a branch at a handed-off step, and resumes after a named step', async () => {
    const edges = [edge('fwd', 'store'), edge('store', 'archive', 'Always')];
    const here = runner([], ['fwd']);
    assert.equal((await walkPlan(edges, 'fwd', here.run)).ok, true);
    assert.deepEqual(here.ran, ['fwd']);
    const there = runner([]);
    assert.equal((await walkPlan(edges, { after: 'fwd' }, there.run)).ok, true);
    assert.deepEqual(there.ran, ['store', 'archive']);
  });
});

describe('target order', () => {
  const t = (id: string, priority: number, weight: number) => ({ serviceDid: 'did:x', serviceId: id, priority, weight });

  it('Priority: ascending priority, then descending weight, then list order', () => {
    const order = priorityOrder([t('a', 5, 1), t('b', 1, 1), t('c', 1, 9), t('d', 1, 1)]).map((x) => x.serviceId);
    assert.deepEqual(order, ['c', 'b', 'd', 'a']);
  });

  it('Weighted: draws without replacement in proportion to weight', () => {
    const draws = [0.95, 0.0, 0.0];
    const order = weightedOrder([t('a', 0, 1), t('b', 0, 1), t('c', 0, 8)], () => draws.shift()!).map((x) => x.serviceId);
    assert.deepEqual(order, ['c', 'a', 'b']);
  });
});

describe('the Relay policy cache', () => {
  const view = (policyId: string | null): DeliveryView => ({
    recipient: { did: 'did:x', deactivated: false, document: null, rootPubkey: new Uint8Array(32) },
    persona: null,
    personaState: null,
    policy:
      policyId === null
        ? null
        : {
            source: 'did',
            sourceId: 'did:x',
            policyId,
            policyRevision: 1,
            ruleId: 'r',
            rulePriority: 1,
            action: { type: 'BaseDidDelivery/v1' },
            effectiveConstraints: {} as DeliveryView['effectiveConstraints'],
            policyTtlSeconds: 30,
          },
    effectiveConstraints: {} as DeliveryView['effectiveConstraints'],
    blockNumber: 1,
    blockHash: '0x',
  });

  it('reuses a winning lookup for policy_ttl_seconds, never a lookup without a winner, never a failure', async () => {
    const clock = new ManualClock(1_000_000);
    let answer: DeliveryView | Error = view('p1');
    let calls = 0;
    const inner: DirectoryPort = {
      getDid: async () => null,
      lookupAlias: async () => null,
      resolveDelivery: async () => {
        calls++;
        if (answer instanceof Error) throw answer;
        return answer;
      },
    };
    const cached = new PolicyCachingDirectory(inner, clock);
    assert.equal((await cached.resolveDelivery('did:x', null, null))?.policy?.policyId, 'p1');
    answer = view('p2');
    clock.advance(29_000);
    assert.equal((await cached.resolveDelivery('did:x', null, null))?.policy?.policyId, 'p1', 'within the TTL');
    assert.equal(calls, 1);
    clock.advance(1_000);
    assert.equal((await cached.resolveDelivery('did:x', null, null))?.policy?.policyId, 'p2', 'after the TTL');
    answer = view(null);
    assert.equal((await cached.resolveDelivery('did:x', null, 'other'))?.policy, null);
    answer = new Error('down');
    await assert.rejects(cached.resolveDelivery('did:x', null, 'other'), /down/, 'no winner is not kept; a failure propagates');
    cached.forget('did:x', null, null);
    await assert.rejects(cached.resolveDelivery('did:x', null, null), /down/);
  });

  it("forget reaches a forgetting port below it (a remote Directory's answer cache)", () => {
    const forgotten: string[] = [];
    const inner = {
      getDid: async () => null,
      lookupAlias: async () => null,
      resolveDelivery: async () => null,
      forget: (did: string, persona: string | null, tag: string | null) => void forgotten.push(JSON.stringify([did, persona, tag])),
    };
    new PolicyCachingDirectory(inner, new ManualClock(0)).forget('did:x', 'brand', 'vip');
    assert.deepEqual(forgotten, ['["did:x","brand","vip"]']);
  });
});
