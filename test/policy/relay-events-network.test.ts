/**
 * Relay events (http-api.md §10.9) on separate Directory, Relay and Cache nodes: a recipient's v3 DID policy binds
 * one rule to `RelayAccepted` and one to `RelayDelivered`, each sending to the recipient itself (profile `platform`
 * lets a DID-scope rule Send only to its owner); relaying one envelope runs each rule's Send step once,
 * on the Relay node, with the `/node/…` context of the Relay (its role, service and endpoint), and the control
 * envelopes they send trigger nothing further (loop guard).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateX25519KeyPair } from '../../src/crypto/x25519.js';
import { decodeFileRecord } from '../../src/protocol/file-record.js';
import { aadFieldsOf, openPayload } from '../../src/protocol/payload-crypto.js';
import { didOf, keyOf, kid } from '../support/directory-flows.js';
import { scrape, total } from '../support/metrics.js';
import type { TestNode } from '../support/network.js';
import { waitFor } from '../support/wait.js';
import {
  envelope,
  profile,
  pullFrom,
  registerControlDid,
  relayPost,
  setPolicy,
  startCacheNode,
  startDirectoryNode,
  startRelayNode,
  type Body,
} from './network-support.js';

describe('Relay events: RelayAccepted and RelayDelivered rules run on the Relay', () => {
  let dir: TestNode;
  let cache: TestNode;
  let relay: TestNode;
  const controlSeed = 93;
  const controlDid = didOf(controlSeed, profile.p);
  const controlKey = keyOf(controlSeed);
  const ka = generateX25519KeyPair();
  const control = { did: controlDid, key: controlKey, keyId: kid(controlDid, 'key-1'), serviceId: kid(controlDid, 'cache') };

  before(async () => {
    dir = await startDirectoryNode();
    cache = await startCacheNode(dir);
    relay = await startRelayNode(dir);
    await registerControlDid(dir, controlSeed, ka.publicKey, cache.urls.cache!);
    const template = (kind: string) => ({
      kind,
      message: { $from: '/envelope/message_id' },
      event: { $from: '/event/type' },
      role: { $from: '/node/role' },
      service: { $from: '/node/service_id' },
      endpoint: { $from: '/node/endpoint' },
    });
    const sendRule = (id: string, event: string, priority: number) => ({
      id,
      priority,
      conditions: [{ type: 'EventEquals', value: event }],
      action: {
        type: 'DeliveryPlan/v1',
        entry_step: 'notify',
        steps: [{ id: 'notify', operation: 'Send', recipient_did: controlDid, payload_template: template(id) }],
        transitions: [],
      },
    });
    await setPolicy(dir, { did: controlDid, key: controlKey }, 'did', controlDid, [
      sendRule('accepted', 'RelayAccepted', 1),
      sendRule('delivered', 'RelayDelivered', 2),
    ]);
  });
  after(async () => {
    await relay?.stop();
    await cache?.stop();
    await dir?.stop();
  });

  it('sends one control envelope per event, rendered with the Relay node context', async () => {
    const before = await scrape(relay.urls.relay!);
    const env = envelope(controlDid);
    const res = await relayPost(relay, env);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.equal(res.body.code, 'cached', 'event-bound rules do not change delivery');
    assert.ok(
      (await pullFrom(cache.urls.cache!, control)).some((m) => m.message_id === env.message_id),
      'the envelope itself is delivered',
    );

    const controls = await waitFor('both control envelopes', async () => {
      const got = (await pullFrom(cache.urls.cache!, control)).filter((m) => (m.envelope as Body).tag === profile.controlTag);
      return got.length >= 2 ? got : undefined;
    });
    const rendered = controls.map((m) => {
      const e = m.envelope as Body;
      const record = decodeFileRecord(profile, openPayload(profile, e.payload, aadFieldsOf(e), ka.privateKey));
      return JSON.parse(Buffer.from(record.data).toString('utf8')) as Body;
    });
    const node = { role: 'relay', service: relay.identity.did + '#relay', endpoint: relay.urls.relay };
    assert.deepEqual(
      rendered.sort((a, b) => String(a.kind).localeCompare(String(b.kind))),
      [
        { kind: 'accepted', message: env.message_id, event: 'RelayAccepted', ...node },
        { kind: 'delivered', message: env.message_id, event: 'RelayDelivered', ...node },
      ],
    );
    await relay.events!.idle();
    const after = (await pullFrom(cache.urls.cache!, control)).filter((m) => (m.envelope as Body).tag === profile.controlTag);
    assert.equal(after.length, 2, 'the control envelopes themselves trigger no rule');
    const metrics = await scrape(relay.urls.relay!);
    const runs = (outcome: string) => total(metrics, 'ddn_event_rule_runs_total', { outcome }) - total(before, 'ddn_event_rule_runs_total', { outcome });
    assert.equal(runs('ok'), 2, 'two rules ran, each plan succeeded');
    assert.equal(runs('failed'), 0);
    // nothing left in progress or waiting, and the gauge says so
    for (const state of ['active', 'waiting']) {
      const sample = metrics.find((m) => m.name === 'ddn_events' && m.labels.state === state);
      assert.equal(sample?.value, 0, `ddn_events{state="${state}"}`);
    }
  });
});
