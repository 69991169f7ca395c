/**
 * The Archive step of a delivery plan (http-api.md §10.4.2): every target is stored to, Success iff one accepted,
 * `details.accepted_archives` lists the accepting Archives (and only those), and the outcome codes of a plan whose
 * Archive step failed. The executor runs against a scripted Cache/Archive storer and a fixed directory.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import type { RequestTrace } from '../../src/base/request-trace.js';
import type { DeliveryView, DidView, DirectoryPort } from '../../src/ports/directory-port.js';
import { NETWORK_CONSTRAINTS } from '../../src/protocol/constraints.js';
import type { Service } from '../../src/protocol/document.js';
import { parseEnvelope } from '../../src/protocol/envelope.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import type { CacheStorer, StoreItem, StoreOutcome } from '../../src/relay/cache-store-client.js';
import { type DeliveryFailure, type DeliveryResult } from '../../src/relay/delivery-result.js';
import { PlanExecutor } from '../../src/relay/plan/executor.js';
import { nodeIdentityOf } from '../../src/relay/node-identity.js';
import { keyOf } from '../support/directory-flows.js';

const RECIPIENT = 'did:platform:8DfbjXLth7APvt3qQPgtf';
const HOST = 'did:platform:2222222222222222';
const NOW = Date.parse('2026-07-16T12:00:00Z');

const service = (frag: string, type: string, endpoints: string[]): Service => ({
  id: `${HOST}#${frag}`,
  type,
  serviceEndpoint: endpoints,
  authorization: null,
  priority: null,
});

/** The host DID publishing one Cache and three Archives. */
const host: DidView = {
  did: HOST,
  deactivated: false,
  rootPubkey: new Uint8Array(32),
  document: {
    id: HOST,
    verificationMethod: [],
    authentication: null,
    keyAgreement: [],
    service: [
      service('cache', 'PlatformCacheService', ['https://cache.example']),
      service('arch-a', 'PlatformArchiveService', ['https://a1.example', 'https://a2.example']),
      service('arch-b', 'PlatformArchiveService', ['https://b.example']),
      service('arch-c', 'PlatformArchiveService', ['https://c.example']),
    ],
  },
};

/** The DID records asked for, with the request id each was asked for. */
const asked: [string, string | undefined][] = [];

const directory: DirectoryPort = {
  getDid: async (did, requestId) => {
    asked.push([did, requestId]);
    return did === HOST ? host : null;
  },
  lookupAlias: async () => null,
  resolveDelivery: async () => null,
};

/** Answers per endpoint (true: 202 with a retention; false: refused), and every body stored. */
class ScriptedStorer implements CacheStorer {
  readonly stored: { endpoint: string; body: Record<string, unknown> }[] = [];
  constructor(private readonly accepts: Record<string, boolean>) {}
  async store(endpoint: string, item: StoreItem): Promise<StoreOutcome> {
    this.stored.push({ endpoint, body: JSON.parse(item.bytes.toString('utf8')) as Record<string, unknown> });
    if (this.accepts[endpoint] !== true) return { ok: false, attempts: 1, cacheResult: `refused_by_${new URL(endpoint).hostname}` };
    const hours = endpoint.includes('cache') ? 24 : 12;
    return { ok: true, attempts: 1, retention: { appliedTtl: `PT${hours}H`, expiresAt: new Date(NOW + hours * 3_600_000).toISOString() } };
  }
}

const target = (frag: string) => ({ service_did: HOST, service_id: `${HOST}#${frag}`, priority: 0, weight: 1 });

function viewWith(steps: Record<string, unknown>[], transitions: Record<string, unknown>[] = []): DeliveryView {
  return {
    recipient: { did: RECIPIENT, deactivated: false, rootPubkey: new Uint8Array(32), document: null },
    persona: null,
    personaState: null,
    policy: {
      source: 'did',
      sourceId: RECIPIENT,
      policyId: `0x${'ab'.repeat(32)}`,
      policyRevision: 3,
      ruleId: 'keep',
      rulePriority: 1,
      action: { type: 'DeliveryPlan/v1', entry_step: String(steps[0]!.id), steps, transitions },
      effectiveConstraints: NETWORK_CONSTRAINTS,
      policyTtlSeconds: 60,
    },
    effectiveConstraints: NETWORK_CONSTRAINTS,
    blockNumber: 7,
    blockHash: `0x${'cd'.repeat(32)}`,
  };
}

async function run(storer: ScriptedStorer, view: DeliveryView, trace?: RequestTrace): Promise<DeliveryResult> {
  const executor = new PlanExecutor({
    profile: PLATFORM,
    identity: nodeIdentityOf(PLATFORM, keyOf(91)),
    directory,
    storer,
    forwarder: { forward: async () => false },
  });
  const fields = { message_id: '6f1c2b9e-3d4a-4e5f-8a7b-1c2d3e4f5a6b', to: RECIPIENT, timestamp: '2026-07-16T12:00:00Z', payload: { ciphertext_b64: 'AA==' } };
  const env = parseEnvelope(fields, { nowMs: NOW, clockSkewSeconds: 300, allowPlaintext: false, allowProvenance: false });
  return executor.execute({ env, envelopes: [Buffer.from(JSON.stringify(fields))], chunked: false, view, trace });
}

async function failure(p: Promise<DeliveryResult>): Promise<DeliveryFailure> {
  const err = await p.then(
    () => assert.fail('the plan should have failed'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof DdnError, String(err));
  return err as DeliveryFailure;
}

describe('plan execution: the Archive step (§10.4.2)', () => {
  it('stores at every Archive target; accepted_archives lists exactly those that accepted', async () => {
    const storer = new ScriptedStorer({ 'https://cache.example': true, 'https://a2.example': true, 'https://c.example': true });
    const view = viewWith(
      [
        { id: 'store', operation: 'Store', targets: [target('cache')], desired_replicas: 1, required_replicas: 1 },
        { id: 'archive', operation: 'Archive', targets: [target('arch-a'), target('arch-b'), target('arch-c')] },
      ],
      [{ from: 'store', to: 'archive', trigger: 'Success', mode: 'Next' }],
    );
    const result = await run(storer, view);
    assert.equal(result.http_status, 202);
    assert.equal(result.code, 'policy_applied');
    assert.equal(result.delivery_mode, 'policy_delivery');
    assert.equal(result.cache_result, 'accepted');
    assert.equal(result.retry_count, 5, 'every endpoint tried once: the Cache, a1, a2, b, c');
    assert.deepEqual(result.details.accepted_caches, ['https://cache.example']);
    assert.deepEqual(result.details.attempted_caches, ['https://cache.example'], 'Archives are not Caches');
    assert.deepEqual(result.details.accepted_archives, ['https://a2.example', 'https://c.example']);
    assert.deepEqual(
      storer.stored.map((s) => s.endpoint),
      ['https://cache.example', 'https://a1.example', 'https://a2.example', 'https://b.example', 'https://c.example'],
    );
    // the copies carry the step's provenance
    const archived = storer.stored.find((s) => s.endpoint === 'https://c.example')!.body;
    assert.equal(archived.policy_rule_id, 'keep');
    assert.deepEqual((archived.policy_context as Record<string, unknown>).step_id, 'archive');
    assert.equal(result.details.applied_ttl, 'PT12H', 'the copy that expires first');
  });

  it('succeeds with one Archive accepting, even when the plan stores nowhere else', async () => {
    const storer = new ScriptedStorer({ 'https://b.example': true });
    const result = await run(storer, viewWith([{ id: 'archive', operation: 'Archive', targets: [target('arch-a'), target('arch-b')] }]));
    assert.equal(result.code, 'policy_applied');
    assert.equal(result.cache_attempted, true);
    assert.equal(result.cache_result, 'accepted');
    assert.deepEqual(result.details.accepted_archives, ['https://b.example']);
    assert.equal(result.details.accepted_caches, undefined);
  });

  it('fails 502 upstream_unavailable when every Archive refused, naming the step', async () => {
    const storer = new ScriptedStorer({});
    const err = await failure(run(storer, viewWith([{ id: 'archive', operation: 'Archive', targets: [target('arch-b'), target('arch-c')] }])));
    assert.equal(err.code, 'upstream_unavailable');
    assert.equal(err.status, 502);
    assert.equal(err.details?.accepted_archives, undefined);
    assert.deepEqual(
      (err.details?.failed_steps as { step_id: string }[]).map((f) => f.step_id),
      ['archive'],
    );
    assert.equal(err.attempts.cacheResult, 'refused_by_c.example');
  });

  it('fails 422 plan_not_deliverable when no Archive target resolves (nothing tried)', async () => {
    const storer = new ScriptedStorer({});
    const err = await failure(run(storer, viewWith([{ id: 'archive', operation: 'Archive', targets: [target('cache'), target('gone')] }])));
    assert.equal(err.code, 'plan_not_deliverable');
    assert.equal(err.status, 422);
    assert.equal(storer.stored.length, 0, 'a Cache service is not an Archive target');
    const reason = (err.details?.failed_steps as { reason: string }[])[0]!.reason;
    assert.match(reason, /service_not_found/);
  });

  it('a failed Archive takes the Failure transition', async () => {
    const storer = new ScriptedStorer({ 'https://cache.example': true });
    const view = viewWith(
      [
        { id: 'archive', operation: 'Archive', targets: [target('arch-b')] },
        { id: 'fallback', operation: 'Store', targets: [target('cache')], desired_replicas: 1, required_replicas: 1 },
      ],
      [{ from: 'archive', to: 'fallback', trigger: 'Failure', mode: 'Next' }],
    );
    const result = await run(storer, view);
    assert.equal(result.code, 'policy_applied');
    assert.deepEqual(result.details.accepted_caches, ['https://cache.example']);
    assert.equal(result.details.accepted_archives, undefined);
  });

  it("resolves every step's targets for the request the plan runs for (its id goes with each lookup)", async () => {
    const storer = new ScriptedStorer({ 'https://cache.example': true, 'https://b.example': true });
    const view = viewWith(
      [
        { id: 'fwd', operation: 'Forward', targets: [target('relay')] },
        { id: 'store', operation: 'Store', targets: [target('cache')], desired_replicas: 1, required_replicas: 1 },
        { id: 'archive', operation: 'Archive', targets: [target('arch-b')] },
      ],
      [
        { from: 'fwd', to: 'store', trigger: 'Failure', mode: 'Next' },
        { from: 'store', to: 'archive', trigger: 'Success', mode: 'Next' },
      ],
    );
    asked.length = 0;
    const silent = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };
    const result = await run(storer, view, { id: 'plan-request', log: silent });
    assert.equal(result.code, 'policy_applied');
    assert.deepEqual(asked, [
      [HOST, 'plan-request'],
      [HOST, 'plan-request'],
      [HOST, 'plan-request'],
    ]);
  });
});
