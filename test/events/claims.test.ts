/**
 * A rule run's claim (src/events/dispatcher.ts): it is kept until an hour after its envelope's requested expiry,
 * from which every Relay and Cache refuses the envelope; what the node reads for that is not in the rule's
 * `/event/…` template context. Policies from a real ledger, claims in a real run store, the Send over real HTTP.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import { utf8 } from '../../src/base/bytes.js';
import { CLAIM_KEPT_AFTER_EXPIRY_MS, eventTemplateContext } from '../../src/events/dispatcher.js';
import { policyIdV3 } from '../../src/protocol/policy/policy-id.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { actor, didScope, planAction, policyV3, rule, send } from '../ledger/policy-harness.js';
import { ledgerDispatcher, relayAccepted } from './event-support.js';

const OWNER = actor(31);

describe('event run claims', () => {
  let relay: Server;
  let relayUrl: string;
  before(async () => {
    relay = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(202, { 'content-type': 'application/json' }).end('{"success":true}'));
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => relay.close(() => r())));

  it("keeps a run's claim until an hour after its envelope's requested expiry", async () => {
    const scope = didScope(OWNER.did);
    const notify = rule('notify', 1, planAction([send('s', OWNER.did, utf8('{"n":1}'))], []), [{ kind: 'EventEquals', event: 'RelayAccepted' }]);
    const policy = policyV3(scope, OWNER.did, [notify], { policyId: policyIdV3(PLATFORM, scope) });
    const s = ledgerDispatcher({ profile: PLATFORM, actors: [OWNER], policies: [policy], relayUrl });
    try {
      const e = relayAccepted(OWNER.did, 1);
      s.d.onEvent(e);
      await s.d.idle();
      assert.deepEqual(s.d.runs(), { ok: 1, failed: 0 });
      const db = new Database(s.runsPath, { readonly: true });
      const rows = db.prepare('SELECT message_id, forget_after_ms FROM event_runs').all();
      db.close();
      assert.deepEqual(rows, [{ message_id: 'm-1', forget_after_ms: e.requested_expiry_ms + CLAIM_KEPT_AFTER_EXPIRY_MS }]);
      assert.equal(CLAIM_KEPT_AFTER_EXPIRY_MS, 3_600_000);
    } finally {
      await s.close();
    }
  });

  it('leaves the requested expiry out of the /event/… template context', () => {
    const e = relayAccepted(OWNER.did, 2);
    const { event, envelope } = eventTemplateContext(e);
    assert.equal('requested_expiry_ms' in event, false);
    assert.deepEqual(Object.keys(event).sort(), [
      'application_id',
      'chunked',
      'message_group_id',
      'message_id',
      'occurred_at',
      'persona',
      'recipient_did',
      'tag',
      'type',
    ]);
    assert.deepEqual(envelope, e.envelope);
  });
});
