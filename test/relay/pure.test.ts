/** The Relay's pure rules: Cache service order, the store loop, live-push eligibility, provenance, node identity, results. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DdnError } from '../../src/base/errors.js';
import type { DidDocument, Service } from '../../src/protocol/document.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { cacheServicesOf, isLivePushEligible, storeInCaches } from '../../src/relay/base-delivery.js';
import type { CacheStorer, StoreItem, StoreOutcome } from '../../src/relay/cache-store-client.js';
import { DeliveryFailure, failureResult, retryAfterOf } from '../../src/relay/delivery-result.js';
import { appendMembers, BaseDidDeliveryExecutor } from '../../src/relay/executor.js';
import { parseEnvelope } from '../../src/protocol/envelope.js';
import { NETWORK_CONSTRAINTS } from '../../src/protocol/constraints.js';
import { nodeDidFor, nodeDocument, nodeIdentityOf, nodeServiceOf, serviceMatches } from '../../src/relay/node-identity.js';
import { checkCapacity, idlePressure, checkSequence, checkSetValues } from '../../src/relay/staging-rules.js';
import { isDid } from '../../src/protocol/did.js';
import { keyOf } from '../support/directory-flows.js';

const DID = 'did:platform:8DfbjXLth7APvt3qQPgtf';

function svc(frag: string, endpoints: string[], priority: number | null = null, type = 'PlatformCacheService'): Service {
  return { id: `${DID}#${frag}`, type, serviceEndpoint: endpoints, authorization: null, priority };
}

function doc(services: Service[]): DidDocument {
  return { id: DID, verificationMethod: [], authentication: null, keyAgreement: [], service: services };
}

/** A storer whose answers are scripted per endpoint: a list of outcomes per call (the last one repeats). */
class ScriptedStorer implements CacheStorer {
  readonly calls: { endpoint: string; body: string }[] = [];
  constructor(private readonly script: Record<string, boolean[]>) {}
  async store(endpoint: string, item: StoreItem): Promise<StoreOutcome> {
    this.calls.push({ endpoint, body: item.bytes.toString() });
    const list = this.script[endpoint] ?? [true];
    const ok = list.length > 1 ? list.shift()! : list[0]!;
    return ok ? { ok: true, attempts: 1, retention: null } : { ok: false, attempts: 2, cacheResult: `no at ${endpoint}` };
  }
}

const bodies = (...names: string[]): StoreItem[] => names.map((n) => ({ bytes: Buffer.from(n) }));

describe('base-DID delivery order and store loop (§10.4.1)', () => {
  it('orders Cache services by priority (absent last), then document order; other types are ignored', () => {
    const services = cacheServicesOf(
      doc([
        svc('a', ['https://a']),
        svc('relay', ['https://r'], 0, 'PlatformRelayService'),
        svc('b', ['https://b1', 'https://b2'], 5),
        svc('c', ['https://c'], 1),
        svc('d', ['https://d']),
        svc('e', ['https://e'], 5),
      ]),
      'PlatformCacheService',
    );
    assert.deepEqual(
      services.map((s) => s.serviceId.split('#')[1]),
      ['c', 'b', 'e', 'a', 'd'],
    );
    assert.deepEqual(services[1]!.endpoints, ['https://b1', 'https://b2']);
    assert.deepEqual(cacheServicesOf(null, 'PlatformCacheService'), []);
  });

  it('stores one replica per service up to max_replicas; endpoints of a service are alternatives', async () => {
    const services = cacheServicesOf(doc([svc('a', ['https://a1', 'https://a2']), svc('b', ['https://b/']), svc('c', ['https://c'])]), 'PlatformCacheService');
    const storer = new ScriptedStorer({ 'https://a1': [false] });
    const report = await storeInCaches(services, bodies('env'), 2, storer);
    assert.deepEqual(report.accepted, ['https://a2', 'https://b']);
    assert.deepEqual(report.attempted, ['https://a1', 'https://a2', 'https://b']);
    assert.equal(report.attempts, 4);
    assert.equal(report.lastFailure, 'no at https://a1');
    const one = await storeInCaches(services, bodies('env'), 1, new ScriptedStorer({}));
    assert.deepEqual(one.accepted, ['https://a1'], 'at least one, stopping at max_replicas');
  });

  it('stores a chunk set whole at one Cache; a failure moves to the next Cache from sequence 0', async () => {
    const services = cacheServicesOf(doc([svc('a', ['https://a']), svc('b', ['https://b'])]), 'PlatformCacheService');
    const storer = new ScriptedStorer({ 'https://a': [true, false] });
    const report = await storeInCaches(services, bodies('c0', 'c1', 'c2'), 1, storer);
    assert.deepEqual(
      storer.calls.map((c) => `${c.endpoint} ${c.body}`),
      ['https://a c0', 'https://a c1', 'https://b c0', 'https://b c1', 'https://b c2'],
    );
    assert.deepEqual(report.accepted, ['https://b']);
  });

  it('base delivery stores one copy: the first Cache that accepts, whatever max_replicas allows', async () => {
    const storer = new ScriptedStorer({ 'https://a': [false] });
    const executor = new BaseDidDeliveryExecutor({ profile: PLATFORM, identity: nodeIdentityOf(PLATFORM, keyOf(90)), storer });
    const nowMs = Date.parse('2026-07-16T12:00:00Z');
    const body = { message_id: '6f1c2b9e-3d4a-4e5f-8a7b-1c2d3e4f5a6b', to: DID, timestamp: '2026-07-16T12:00:00Z', payload: { ciphertext_b64: 'AA==' } };
    const env = parseEnvelope(body, { nowMs, clockSkewSeconds: 300, allowPlaintext: false, allowProvenance: false });
    const result = await executor.execute({
      env,
      envelopes: [Buffer.from(JSON.stringify(body))],
      chunked: false,
      view: {
        recipient: {
          did: DID,
          deactivated: false,
          document: doc([svc('a', ['https://a']), svc('b', ['https://b']), svc('c', ['https://c'])]),
          rootPubkey: new Uint8Array(32),
        },
        persona: null,
        personaState: null,
        policy: null,
        effectiveConstraints: { ...NETWORK_CONSTRAINTS, maxReplicas: 4 },
        blockNumber: 1,
        blockHash: `0x${'00'.repeat(32)}`,
      },
    });
    assert.deepEqual(
      storer.calls.map((c) => c.endpoint),
      ['https://a', 'https://b'],
      'no store after the first 202',
    );
    assert.equal(result.code, 'cached');
    assert.deepEqual(result.details, { accepted_caches: ['https://b'], attempted_caches: ['https://a', 'https://b'] });
  });

  it('reports every endpoint failing', async () => {
    const services = cacheServicesOf(doc([svc('a', ['https://a']), svc('b', ['https://b'])]), 'PlatformCacheService');
    const report = await storeInCaches(services, bodies('x'), 4, new ScriptedStorer({ 'https://a': [false], 'https://b': [false] }));
    assert.deepEqual(report.accepted, []);
    assert.deepEqual(report.attempted, ['https://a', 'https://b']);
    assert.equal(report.attempts, 4);
    assert.equal(report.lastFailure, 'no at https://b');
  });

  it('pushes live only unchunked envelopes whose `to` is the DID byte for byte', () => {
    assert.equal(isLivePushEligible({ to: DID }, DID), true);
    assert.equal(isLivePushEligible({ to: `${DID}@acme` }, DID), false);
    assert.equal(isLivePushEligible({ recipient: DID }, DID), false);
    assert.equal(isLivePushEligible({ to: 'alias' }, DID), false);
    assert.equal(isLivePushEligible({ to: DID, message_group_id: 'g' }, DID), false);
  });

  it('appends provenance members without touching the client bytes', () => {
    const text = Buffer.from('{"b":1,  "a":"x"}');
    assert.equal(
      appendMembers(text, { policy_id: '0x1', policy_context: { source: 'did' } }).toString(),
      '{"b":1,  "a":"x","policy_id":"0x1","policy_context":{"source":"did"}}',
    );
    assert.equal(appendMembers(text, {}).toString(), text.toString());
  });
});

describe('node identity document', () => {
  it('derives a stable DID from the key and builds the #node / #relay document', () => {
    const key = keyOf(3);
    const id = nodeIdentityOf(PLATFORM, key);
    assert.equal(id.did, nodeDidFor(PLATFORM, key.publicKey));
    assert.ok(isDid(id.did));
    assert.notEqual(id.did, nodeDidFor(PLATFORM, keyOf(4).publicKey));
    assert.equal(id.serviceId, `${id.did}#relay`);
    assert.equal(id.keyId, `${id.did}#node`);
    const d = nodeDocument(PLATFORM, id, ['https://relay.example']);
    assert.deepEqual(
      d.verificationMethod.map((v) => [v.id, v.type, v.controller]),
      [[id.keyId, 'Ed25519VerificationKey2020', id.did]],
    );
    assert.deepEqual(d.service, [
      { id: id.serviceId, type: 'PlatformRelayService', serviceEndpoint: ['https://relay.example'], authorization: [id.keyId], priority: null },
    ]);
    assert.equal(nodeDocument(PLATFORM, id, []).service, null, 'no public Relay URL, no service');
    const wanted = nodeServiceOf(PLATFORM, id, ['https://relay.example'])!;
    assert.equal(serviceMatches(wanted, wanted), true);
    assert.equal(serviceMatches({ ...wanted, serviceEndpoint: ['https://old.example'] }, wanted), false);
    assert.equal(serviceMatches(undefined, wanted), false);
  });

  it('a Cache-only node acts under its own #cache service (event Calls are signed as it)', () => {
    const id = nodeIdentityOf(PLATFORM, keyOf(3), 'cache');
    assert.equal(id.did, nodeIdentityOf(PLATFORM, keyOf(3)).did, 'the same DID whatever the service');
    assert.equal(id.serviceId, `${id.did}#cache`);
    assert.deepEqual(nodeDocument(PLATFORM, id, ['https://cache.example']).service, [
      { id: id.serviceId, type: 'PlatformCacheService', serviceEndpoint: ['https://cache.example'], authorization: [id.keyId], priority: null },
    ]);
  });
});

describe('staging rules and results', () => {
  const values = { total: 3, to: DID, tag: 't', applicationId: null, sender: null };
  it('checks the fixed set values, sequences and capacity', () => {
    checkSetValues('g', values, { ...values });
    for (const [k, v, field] of [
      ['total', 4, 'total_chunks'],
      ['to', 'x', 'to'],
      ['tag', null, 'tag'],
      ['applicationId', 'app', 'application_id'],
      ['sender', DID, 'sender'],
    ] as const) {
      assert.throws(
        () => checkSetValues('g', values, { ...values, [k]: v }),
        (e: unknown) => e instanceof DdnError && e.code === 'chunk_set_conflict' && e.details?.field === field,
      );
    }
    assert.equal(checkSequence('g', 0, null, 'h'), 'new');
    assert.equal(checkSequence('g', 0, 'h', 'h'), 'replay');
    assert.throws(
      () => checkSequence('g', 0, 'h', 'other'),
      (e: unknown) => e instanceof DdnError && e.code === 'chunk_conflict',
    );
    const cap = {
      newSet: true,
      total: 3,
      setBytes: 0,
      maxSetBytes: 10,
      setsOfRecipient: 1,
      maxSetsPerRecipient: 2,
      recipientBytes: 4,
      maxBytesPerRecipient: 9,
      ownerBytes: 3,
      maxBytesPerOwner: 8,
      stagedBytes: 10,
      addBytes: 5,
      maxBytes: 15,
    };
    checkCapacity(cap);
    checkCapacity({ ...cap, newSet: false, setsOfRecipient: 2 });
    assert.deepEqual(idlePressure(cap), { recipient: false, node: false });
    const limits: [Partial<typeof cap>, string][] = [
      [{ setsOfRecipient: 2 }, 'sets_per_recipient'],
      [{ recipientBytes: 5 }, 'recipient_bytes'],
      [{ ownerBytes: 4 }, 'sender_bytes'],
      [{ stagedBytes: 11 }, 'bytes'],
    ];
    for (const [over, limit] of limits) {
      assert.throws(
        () => checkCapacity({ ...cap, ...over }),
        (e: unknown) => e instanceof DdnError && e.code === 'staging_capacity_full' && e.details?.limit === limit && e.details.retry_after_seconds === 30,
      );
    }
    assert.deepEqual(idlePressure({ ...cap, setsOfRecipient: 2 }), { recipient: true, node: false });
    assert.deepEqual(idlePressure({ ...cap, recipientBytes: 5, stagedBytes: 11 }), { recipient: true, node: true });
    // a set whose announced total of chunks this size exceeds the per-set cap is refused at its first chunk (413:
    // it can never fit); a set that outgrew the cap is refused too
    for (const over of [{ total: 4 }, { newSet: false, setBytes: 6 }]) {
      assert.throws(
        () => checkCapacity({ ...cap, ...over }),
        (e: unknown) => e instanceof DdnError && e.code === 'payload_too_large' && e.status === 413 && e.details?.limit === 'set_bytes',
      );
    }
    // an existing set is never judged by its total again (its first chunk may have been the short last one)
    checkCapacity({ ...cap, newSet: false, total: 4 });
    // without an owner (no cap) the owner bound is not checked
    const { ownerBytes: _o, ...ownerless } = cap;
    checkCapacity({ ...ownerless, maxBytesPerOwner: 1 });
  });

  it('renders failures with their attempts and Retry-After', () => {
    const r = failureResult(
      new DeliveryFailure('upstream_unavailable', 'down', { attempted_caches: ['https://a'] }, { retryCount: 3, cacheAttempted: true, cacheResult: 'failed' }),
    );
    assert.deepEqual(r, {
      success: false,
      delivery_mode: 'failed',
      http_status: 502,
      code: 'upstream_unavailable',
      message: 'down',
      retry_count: 3,
      cache_attempted: true,
      cache_result: 'failed',
      details: { attempted_caches: ['https://a'] },
    });
    assert.equal(retryAfterOf(r), undefined);
    assert.equal(retryAfterOf(failureResult(new DdnError('policy_lookup_failed'))), 1);
    assert.equal(retryAfterOf(failureResult(new DdnError('staging_capacity_full', 'x', { retry_after_seconds: 30 }))), 30);
  });
});

describe('relay configuration', () => {
  it('reads the Relay limits, staging capacity and the remote Directory URL', async () => {
    const { loadConfig } = await import('../../src/app/config.js');
    const defaults = loadConfig([], {});
    assert.deepEqual(defaults.directoryUrl, []);
    assert.deepEqual(
      [defaults.relay.maxUnchunkedMessageBytes, defaults.relay.maxChunkBytes, defaults.relay.stagingMaxBytes, defaults.relay.stagingMaxSetsPerRecipient],
      [16_777_216, 2_097_152, 1_073_741_824, 64],
    );
    const c = loadConfig(
      [
        '--directory-url',
        'http://dir.example:8080/',
        '--relay-max-unchunked-bytes',
        '1000',
        '--relay-max-chunk-bytes',
        '500',
        '--relay-staging-max-bytes',
        '9000',
        '--relay-staging-max-sets-per-recipient',
        '3',
      ],
      {},
    );
    assert.deepEqual(c.directoryUrl, ['http://dir.example:8080']);
    assert.deepEqual(
      [c.relay.maxUnchunkedMessageBytes, c.relay.maxChunkBytes, c.relay.stagingMaxBytes, c.relay.stagingMaxSetsPerRecipient],
      [1000, 500, 9000, 3],
    );
    assert.deepEqual(loadConfig([], { DDN_DIRECTORY_URL: 'https://d.example' }).directoryUrl, ['https://d.example']);
    assert.throws(() => loadConfig(['--directory-url', 'ftp://x'], {}), /--directory-url/);
    assert.throws(() => loadConfig(['--relay-staging-max-sets-per-recipient', '0'], {}), /--relay-staging-max-sets-per-recipient/);
  });
});
