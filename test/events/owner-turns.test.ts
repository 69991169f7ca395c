/**
 * Event rules run in turns (src/events/turns.ts, docs/public-node.md "Event rules and amplification"): one owner's
 * rule that takes long (here a Send the stand-in Relay does not answer) holds only that owner's later runs, never
 * another owner's events; an owner's runs go one at a time, in event order, and too many waiting are dropped and
 * counted; the node's events in progress are bounded in total. Policies come from a real ledger, claims go to a
 * real run store, control envelopes over real HTTP to a local stand-in Relay.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { utf8 } from '../../src/base/bytes.js';
import type { DispatcherLimits } from '../../src/events/dispatcher.js';
import { policyIdV3 } from '../../src/protocol/policy/policy-id.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { actor, didScope, planAction, policyV3, rule, send } from '../ledger/policy-harness.js';
import { waitFor } from '../support/wait.js';
import { ledgerDispatcher, relayAccepted } from './event-support.js';

const SLOW = actor(21);
const FAST = actor(22);
const OTHER = actor(23);

/** Each owner's DID policy: on RelayAccepted, Send a control envelope to itself. */
function policyOf(owner: ReturnType<typeof actor>) {
  const scope = didScope(owner.did);
  const notify = rule('notify', 1, planAction([send('s', owner.did, utf8('{"n":1}'))], []), [{ kind: 'EventEquals', event: 'RelayAccepted' }]);
  return policyV3(scope, owner.did, [notify], { policyId: policyIdV3(PLATFORM, scope) });
}

describe('event rules run in turns', () => {
  let relay: Server;
  let relayUrl: string;
  /** Control envelopes answered, by recipient, in arrival order. */
  const answered: string[] = [];
  /** Recipients whose control envelopes the Relay holds, unanswered until the test says so (SLOW unless a test adds one). */
  const holdFor = new Set<string>();
  /** The control envelopes held, with their recipients. */
  const held: { to: string; res: ServerResponse }[] = [];
  before(async () => {
    relay = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const to = String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { to: string }).to);
        if (holdFor.has(to)) held.push({ to, res });
        else {
          answered.push(to);
          res.writeHead(202, { 'content-type': 'application/json' }).end('{"success":true}');
        }
      });
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => relay.close(() => r())));

  /** Answers the held control envelopes (each counted as answered). */
  const releaseSlow = (): void => {
    for (const { to, res } of held.splice(0)) {
      answered.push(to);
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"success":true}');
    }
  };

  function setup(limits: Partial<DispatcherLimits> = {}) {
    answered.length = 0;
    holdFor.clear();
    holdFor.add(SLOW.did);
    const s = ledgerDispatcher({ profile: PLATFORM, actors: [SLOW, FAST, OTHER], policies: [SLOW, FAST, OTHER].map(policyOf), relayUrl, limits });
    return {
      d: s.d,
      close: async () => {
        releaseSlow();
        await s.close();
      },
    };
  }

  it("an owner's run that does not end holds its own later runs, not another owner's events", async () => {
    const s = setup();
    try {
      s.d.onEvent(relayAccepted(SLOW.did, 1));
      await waitFor('the first Send to SLOW reaches the Relay', async () => (held.length === 1 ? true : undefined));
      s.d.onEvent(relayAccepted(SLOW.did, 2));
      s.d.onEvent(relayAccepted(FAST.did, 3));
      s.d.onEvent(relayAccepted(OTHER.did, 4));
      await waitFor("the other owners' Sends are answered", async () => (answered.length === 2 ? true : undefined));
      // the stand-in Relay counts a Send answered when it writes the answer: their runs end once the node reads it
      await waitFor("the other owners' runs ended", async () => (s.d.runs().ok === 2 ? true : undefined));
      assert.deepEqual([...answered].sort(), [FAST.did, OTHER.did].sort());
      assert.equal(held.length, 1, "SLOW's second run waits for its first");
      assert.deepEqual(s.d.load(), { active: 1, waiting: 1 }, "SLOW's run in progress, its second waiting for its turn");
      releaseSlow();
      await waitFor("SLOW's second Send, once its first was answered", async () => (held.length === 1 ? true : undefined));
      releaseSlow();
      await s.d.idle();
      assert.deepEqual(answered.slice(2), [SLOW.did, SLOW.did]);
      assert.deepEqual(s.d.runs(), { ok: 4, failed: 0 });
      assert.equal(s.d.drops().owner_queue_full, 0);
    } finally {
      await s.close();
    }
  });

  it("drops and counts an owner's runs beyond those waiting at most, unclaimed", async () => {
    const s = setup({ maxWaitingPerOwner: 2 });
    try {
      s.d.onEvent(relayAccepted(SLOW.did, 1));
      await waitFor('the first Send to SLOW reaches the Relay', async () => (held.length === 1 ? true : undefined));
      for (let n = 2; n <= 5; n++) s.d.onEvent(relayAccepted(SLOW.did, n));
      await waitFor('two runs dropped', async () => (s.d.drops().owner_queue_full === 2 ? true : undefined));
      s.d.onEvent(relayAccepted(FAST.did, 6));
      await waitFor("FAST's Send answered", async () => (answered.includes(FAST.did) ? true : undefined));
      for (let k = 0; k < 3; k++) {
        await waitFor(`SLOW's run ${k + 1} at the Relay`, async () => (held.length === 1 ? true : undefined));
        releaseSlow();
      }
      await s.d.idle();
      assert.equal(answered.filter((d) => d === SLOW.did).length, 3, 'the running one and the two that waited');
      assert.deepEqual(s.d.drops(), { queue_full: 0, owner_budget: 0, owner_queue_full: 2, step_cap: 0, send_not_consented: 0 });
      // the dropped events were not claimed: delivered again, they run
      s.d.onEvent(relayAccepted(SLOW.did, 4));
      await waitFor('the dropped run, delivered again', async () => (held.length === 1 ? true : undefined));
    } finally {
      await s.close();
    }
  });

  it('bounds the events in progress in total: past the bound an event waits for one to end', async () => {
    const s = setup({ maxActive: 1 });
    try {
      s.d.onEvent(relayAccepted(SLOW.did, 1));
      await waitFor('the Send to SLOW reaches the Relay', async () => (held.length === 1 ? true : undefined));
      s.d.onEvent(relayAccepted(FAST.did, 2));
      // FAST's event has no slot while SLOW's run holds the only one: give it turns to show it does not run
      for (let k = 0; k < 20; k++) await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(answered, []);
      assert.deepEqual(s.d.load(), { active: 1, waiting: 1 }, "FAST's event waits for the slot");
      releaseSlow();
      await s.d.idle();
      assert.deepEqual(answered, [SLOW.did, FAST.did]);
      assert.deepEqual(s.d.load(), { active: 0, waiting: 0 });
    } finally {
      await s.close();
    }
  });
  it('stops: the runs in progress end, the events not started and the runs waiting for a turn are dropped unclaimed', async () => {
    const s = setup({ maxActive: 2 });
    holdFor.add(FAST.did);
    try {
      s.d.onEvent(relayAccepted(SLOW.did, 1));
      await waitFor('the Send to SLOW reaches the Relay', async () => (held.length === 1 ? true : undefined));
      s.d.onEvent(relayAccepted(SLOW.did, 2)); // waits for SLOW's turn, holding no slot
      s.d.onEvent(relayAccepted(FAST.did, 3)); // takes the second slot
      await waitFor('the Send to FAST reaches the Relay', async () => (held.length === 2 ? true : undefined));
      s.d.onEvent(relayAccepted(OTHER.did, 4)); // waits for a slot
      let stopped = false;
      const stopping = s.d.stop().then(() => (stopped = true));
      s.d.onEvent(relayAccepted(OTHER.did, 5)); // after stop: ignored
      for (let k = 0; k < 20; k++) await new Promise((r) => setImmediate(r));
      assert.equal(stopped, false, 'the runs in progress are waited for');
      releaseSlow();
      await stopping;
      assert.deepEqual([...answered].sort(), [FAST.did, SLOW.did].sort(), 'neither the waiting run nor the events not started ran');
      assert.equal(held.length, 0);
    } finally {
      await s.close();
    }
  });
});
