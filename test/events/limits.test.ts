/**
 * Event rules cannot be turned into spam (src/events/limits.ts, docs/public-node.md "Event rules and
 * amplification"): in profile `platform` a Did/Persona rule's Send reaches only its owner, even when the policy on
 * the ledger predates that rule; `openpayload` keeps the deployed rule; every event runs at most
 * MAX_STEP_RUNS_PER_EVENT Send/Call steps; each policy owner has a budget of events per minute. What is dropped
 * is counted. Policies come from a real ledger (written past the ledger's write checks, as an older chain would
 * hold them); control envelopes go over real HTTP to a local stand-in Relay.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { utf8 } from '../../src/base/bytes.js';
import { healthBody } from '../../src/app/health.js';
import { openOwnerBudget } from '../../src/app/event-budget.js';
import { ManualClock } from '../../src/base/clock.js';
import { MAX_STEP_RUNS_PER_EVENT, MemoryOwnerBudget, type OwnerBudget } from '../../src/events/limits.js';
import { policyIdV3 } from '../../src/protocol/policy/policy-id.js';
import type { DeliveryStep, DeliveryTransition, PolicyRule } from '../../src/protocol/policy/types.js';
import { makeProfile, PLATFORM, type Profile } from '../../src/protocol/profile.js';
import type { RelayEvent } from '../../src/relay/service.js';
import { ledgerDispatcher, relayAccepted } from './event-support.js';
import { actor, didScope, planAction, policyV3, rule, send } from '../ledger/policy-harness.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';

const OWNER = actor(7);
const STRANGER = actor(11);
const event = (n: number): RelayEvent => relayAccepted(OWNER.did, n);
const OPENPAYLOAD = makeProfile('openpayload');

/** A rule bound to RelayAccepted whose Send steps all run (Fork edges from the first). */
function sendsRule(targets: string[]): PolicyRule {
  const steps: DeliveryStep[] = targets.map((t, i) => send(`s${i}`, t, utf8('{"n":1}')));
  const forks: DeliveryTransition[] = steps.slice(1).map((s) => ({ from: 's0', to: s.id, trigger: 'Always', mode: 'Fork' }));
  return rule('notify', 1, planAction(steps, forks), [{ kind: 'EventEquals', event: 'RelayAccepted' }]);
}

describe('event rule limits', () => {
  let relay: Server;
  let relayUrl: string;
  const posted: string[] = [];
  before(async () => {
    relay = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        posted.push(String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { to: string }).to));
        res.writeHead(202, { 'content-type': 'application/json' }).end('{"success":true}');
      });
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => relay.close(() => r())));

  /**
   * A ledger of `profile` holding OWNER's DID-scope policy with `ruleset`, put straight into state (no write
   * check), and a dispatcher reading it.
   */
  function setup(profile: Profile, ruleset: PolicyRule[], budget?: number | OwnerBudget) {
    const scope = didScope(OWNER.did);
    const policy = policyV3(scope, OWNER.did, ruleset, { policyId: policyIdV3(profile, scope) });
    posted.length = 0;
    const budgets = budget === undefined ? {} : typeof budget === 'number' ? { budget } : { ownerBudget: budget };
    return ledgerDispatcher({ profile, actors: [OWNER, STRANGER], policies: [policy], relayUrl, ...budgets });
  }

  it('platform: a policy already on the ledger that Sends to a stranger sends nothing to it; its Send to the owner runs', async () => {
    const s = setup(PLATFORM, [sendsRule([STRANGER.did, OWNER.did])]);
    try {
      s.d.onEvent(event(1));
      await s.d.idle();
      assert.deepEqual(posted, [OWNER.did]);
      assert.deepEqual(s.d.drops(), { queue_full: 0, owner_budget: 0, step_cap: 0, send_not_consented: 1, owner_queue_full: 0 });
    } finally {
      await s.close();
    }
  });

  it('counts each rule run by its outcome (ddn_event_rule_runs_total)', async () => {
    for (const [target, runs] of [
      [OWNER.did, { ok: 1, failed: 0 }],
      [STRANGER.did, { ok: 0, failed: 1 }],
    ] as const) {
      const s = setup(PLATFORM, [sendsRule([target])]);
      try {
        s.d.onEvent(event(1));
        await s.d.idle();
        assert.deepEqual(s.d.runs(), runs, target);
      } finally {
        await s.close();
      }
    }
  });

  it('openpayload: the same policy sends to the stranger (the deployed rule)', async () => {
    const s = setup(OPENPAYLOAD, [sendsRule([STRANGER.did, OWNER.did])]);
    try {
      s.d.onEvent(event(1));
      await s.d.idle();
      assert.deepEqual([...posted].sort(), [OWNER.did, STRANGER.did].sort());
      assert.equal(s.d.drops().send_not_consented, 0);
    } finally {
      await s.close();
    }
  });

  it(`runs at most ${MAX_STEP_RUNS_PER_EVENT} Send/Call steps per event and counts the rest`, async () => {
    const s = setup(OPENPAYLOAD, [sendsRule(Array.from({ length: 7 }, () => STRANGER.did))]);
    try {
      s.d.onEvent(event(1));
      await s.d.idle();
      assert.equal(posted.length, MAX_STEP_RUNS_PER_EVENT);
      assert.equal(s.d.drops().step_cap, 7 - MAX_STEP_RUNS_PER_EVENT);
      s.d.onEvent(event(2));
      await s.d.idle();
      assert.equal(posted.length, 2 * MAX_STEP_RUNS_PER_EVENT, 'the cap is per event');
    } finally {
      await s.close();
    }
  });

  it("drops and counts an owner's events beyond its budget for the minute; the next minute runs again", async () => {
    const s = setup(PLATFORM, [sendsRule([OWNER.did])], 2);
    try {
      for (let i = 0; i < 5; i++) s.d.onEvent(event(i));
      await s.d.idle();
      assert.equal(posted.length, 2);
      assert.equal(s.d.drops().owner_budget, 3);
      s.clock.advance(60_000);
      s.d.onEvent(event(9));
      await s.d.idle();
      assert.equal(posted.length, 3);
      // an operator reads the counters on GET /health
      const body = healthBody({
        roles: ['relay'],
        profile: 'platform',
        chainId: 'c',
        ledger: {
          genesisHash: new Uint8Array(32),
          headRef: () => ({ number: 0, hash: '0x', timestampMs: 0 }),
          finalizedRefNow: () => ({ number: 0, hash: '0x', timestampMs: 0 }),
        },
        isReady: () => true,
        eventDrops: () => s.d.drops(),
      });
      assert.deepEqual(body.events, { dropped: { queue_full: 0, owner_budget: 3, owner_queue_full: 0, step_cap: 0, send_not_consented: 0 } });
    } finally {
      await s.close();
    }
  });
  it("without a database the budget is counted in memory, on the node's clock", async () => {
    const clock = new ManualClock(0);
    const owners = await openOwnerBudget(1, null, clock);
    assert.ok(owners.budget instanceof MemoryOwnerBudget);
    assert.equal(await owners.budget.take(OWNER.did), true);
    assert.equal(await owners.budget.take(OWNER.did), false);
    clock.advance(60_000);
    assert.equal(await owners.budget.take(OWNER.did), true);
    await owners.close();
  });

  if (PG_URL) {
    it("processes sharing a PostgreSQL database share an owner's budget: it is spent once in all, another owner has its own", async () => {
      const pg = await freshPgSchema();
      const db = { url: pg.url, schema: pg.schema };
      const one = await openOwnerBudget(3, db, new ManualClock(0));
      const two = await openOwnerBudget(3, db, new ManualClock(0));
      const a = setup(PLATFORM, [sendsRule([OWNER.did])], one.budget);
      const b = ledgerDispatcher({
        profile: PLATFORM,
        actors: [OWNER, STRANGER],
        policies: [policyV3(didScope(OWNER.did), OWNER.did, [sendsRule([OWNER.did])], { policyId: policyIdV3(PLATFORM, didScope(OWNER.did)) })],
        relayUrl,
        ownerBudget: two.budget,
      });
      try {
        for (let i = 0; i < 3; i++) {
          a.d.onEvent(event(2 * i));
          b.d.onEvent(event(2 * i + 1));
        }
        await Promise.all([a.d.idle(), b.d.idle()]);
        assert.equal(posted.length, 3, 'three runs in all, not three per process');
        assert.equal(a.d.drops().owner_budget + b.d.drops().owner_budget, 3);
        assert.equal(await one.budget.take(STRANGER.did), true, "another owner's budget is its own");
        const rows = await pg.pool.query<{ key: string; points: number }>('SELECT key, points FROM rate_limits ORDER BY key');
        assert.deepEqual(
          rows.rows.map((r) => r.key),
          [`event-owner:${OWNER.did}`, `event-owner:${STRANGER.did}`].sort(),
        );
      } finally {
        await a.close();
        await b.close();
        await one.close();
        await two.close();
        await pg.drop();
      }
    });
  }
});
