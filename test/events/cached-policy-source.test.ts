/** The remote event-policy cache (CachedPolicySource in src/events/policy-source.ts, on src/base/ttl-answers.ts). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/base/clock.js';
import { DdnError } from '../../src/base/errors.js';
import { CachedPolicySource, EVENT_POLICY_TTL_MS, type EventPolicySource, type EventScope } from '../../src/events/policy-source.js';

const DID: EventScope = { type: 'DID', id: 'did:platform:abc' };
const PERSONA: EventScope = { type: 'PERSONA', id: 'did:platform:abc' };

/** A source that counts its calls; `answers` decides what each scope id gets. */
function countingSource(answers: Map<string, 'policy' | 'none' | 'fail'>) {
  const calls: string[] = [];
  const source: EventPolicySource = {
    policy: async (scope) => {
      calls.push(`${scope.type} ${scope.id}`);
      const a = answers.get(scope.id) ?? 'policy';
      if (a === 'fail') throw new DdnError('policy_lookup_failed', 'down');
      return a === 'none' ? null : { policy_id: `${scope.type}:${scope.id}`, ruleset: [] };
    },
  };
  return { source, calls };
}

describe('CachedPolicySource', () => {
  it('reuses answers, "no policy" included, for the TTL, per scope type and id, then asks again', async () => {
    const clock = new ManualClock(0);
    const answers = new Map<string, 'policy' | 'none' | 'fail'>([['did:platform:none', 'none']]);
    const { source, calls } = countingSource(answers);
    const cached = new CachedPolicySource(source, clock);
    const none: EventScope = { type: 'DID', id: 'did:platform:none' };
    assert.deepEqual(await cached.policy(DID), { policy_id: 'DID:did:platform:abc', ruleset: [] });
    assert.equal(await cached.policy(none), null);
    clock.advance(EVENT_POLICY_TTL_MS - 1);
    assert.deepEqual(await cached.policy(DID), { policy_id: 'DID:did:platform:abc', ruleset: [] });
    assert.equal(await cached.policy(none), null);
    assert.deepEqual(calls, ['DID did:platform:abc', 'DID did:platform:none']);
    assert.deepEqual(await cached.policy(PERSONA), { policy_id: 'PERSONA:did:platform:abc', ruleset: [] }, 'another scope type is another key');
    clock.advance(1);
    answers.set('did:platform:none', 'policy');
    assert.deepEqual(await cached.policy(none), { policy_id: 'DID:did:platform:none', ruleset: [] }, 'a policy set meanwhile is seen after the TTL');
    assert.equal(calls.length, 4);
  });

  it('shares one request between concurrent lookups and never keeps a failure', async () => {
    const clock = new ManualClock(0);
    const answers = new Map<string, 'policy' | 'none' | 'fail'>([[DID.id, 'fail']]);
    const { source, calls } = countingSource(answers);
    const cached = new CachedPolicySource(source, clock);
    const both = await Promise.allSettled([cached.policy(DID), cached.policy(DID)]);
    assert.deepEqual(
      both.map((r) => r.status),
      ['rejected', 'rejected'],
    );
    assert.equal(calls.length, 1, 'concurrent lookups share one request');
    answers.set(DID.id, 'policy');
    assert.deepEqual(await cached.policy(DID), { policy_id: 'DID:did:platform:abc', ruleset: [] }, 'the failure was not kept');
    assert.equal(calls.length, 2);
  });
});
