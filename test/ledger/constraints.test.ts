/** Constraint algebra of ledger-rules.md §7.3: validated, narrow, clamp. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NETWORK_CONSTRAINTS as N, type DeliveryConstraints } from '../../src/protocol/constraints.js';
import { LedgerFailure } from '../../src/ledger/errors.js';
import { clampConstraints, narrowConstraints, validatedConstraints } from '../../src/ledger/runtime/constraints.js';
import { overrides, requested } from './policy-harness.js';

const fails = (name: string) => (e: unknown) => e instanceof LedgerFailure && e.errorName === name;

const base: DeliveryConstraints = {
  requestedCacheSeconds: 3600,
  effectiveTtlSeconds: 3600,
  maxHttpEnvelopeBytes: 1_000_000,
  maxUnchunkedMessageBytes: 500_000,
  maxChunkBytes: 100_000,
  maxMessageBytes: N.maxMessageBytes,
  maxChunks: N.maxChunks,
  maxReplicas: 2,
};

test('validated: bounds, size chain, effective TTL capped at 48 h, deprecated inputs ignored', () => {
  assert.deepEqual(validatedConstraints(requested()), base);
  assert.equal(validatedConstraints(requested({ requestedCacheSeconds: 4_294_967_295 })).effectiveTtlSeconds, 172_800);
  const limits = requested({ maxHttpEnvelopeBytes: 26_214_400, maxUnchunkedMessageBytes: 16_777_216, maxChunkBytes: 2_097_152, maxReplicas: 4 });
  assert.equal(validatedConstraints(limits).maxHttpEnvelopeBytes, 26_214_400);
  for (const bad of [
    { requestedCacheSeconds: 0 },
    { maxHttpEnvelopeBytes: 0 },
    { maxHttpEnvelopeBytes: 26_214_401, maxUnchunkedMessageBytes: 500_000 },
    { maxUnchunkedMessageBytes: 0 },
    { maxHttpEnvelopeBytes: 20_000_000, maxUnchunkedMessageBytes: 16_777_217 },
    { maxChunkBytes: 0 },
    { maxUnchunkedMessageBytes: 3_000_000, maxChunkBytes: 2_097_153 },
    { maxReplicas: 0 },
    { maxReplicas: 5 },
    { maxUnchunkedMessageBytes: 1_000_001 },
    { maxChunkBytes: 500_001 },
  ]) {
    assert.throws(() => validatedConstraints(requested(bad)), fails('InvalidConstraints'), JSON.stringify(bad));
  }
});

test('narrow: None keeps the base; Some must be 0 < v ≤ base; the chain must hold; TTL follows requested', () => {
  assert.equal(narrowConstraints(base, null), base);
  assert.deepEqual(narrowConstraints(base, overrides({})), base);
  const n = narrowConstraints(base, overrides({ requestedCacheSeconds: 60, maxChunkBytes: 10, maxReplicas: 1, maxMessageBytes: 0, maxChunks: 0 }));
  assert.deepEqual(n, { ...base, requestedCacheSeconds: 60, effectiveTtlSeconds: 60, maxChunkBytes: 10, maxReplicas: 1 });
  assert.throws(() => narrowConstraints(base, overrides({ maxReplicas: 3 })), fails('ConstraintOverrideExceedsScope'));
  assert.throws(() => narrowConstraints(base, overrides({ maxChunkBytes: 0 })), fails('ConstraintOverrideExceedsScope'));
  assert.throws(() => narrowConstraints(base, overrides({ maxHttpEnvelopeBytes: 400_000 })), fails('InvalidConstraints'));
  // The first failing field in order decides between the two errors.
  assert.throws(() => narrowConstraints(base, overrides({ maxHttpEnvelopeBytes: 10, maxReplicas: 9 })), fails('ConstraintOverrideExceedsScope'));
});

test('clamp: never fails, overrides above the base are capped, the chain is re-established', () => {
  assert.equal(clampConstraints(base, null), base);
  const c = clampConstraints(base, overrides({ maxHttpEnvelopeBytes: 5_000_000, maxReplicas: 4, requestedCacheSeconds: 100 }));
  assert.deepEqual(c, { ...base, requestedCacheSeconds: 100, effectiveTtlSeconds: 100 });
  const chain = clampConstraints(base, overrides({ maxHttpEnvelopeBytes: 1000 }));
  assert.deepEqual([chain.maxHttpEnvelopeBytes, chain.maxUnchunkedMessageBytes, chain.maxChunkBytes], [1000, 1000, 1000]);
  const ttl = clampConstraints({ ...base, effectiveTtlSeconds: 50 }, overrides({ requestedCacheSeconds: 3000 }));
  assert.deepEqual([ttl.requestedCacheSeconds, ttl.effectiveTtlSeconds], [3000, 50]);
});
