/**
 * Turns at the system resolver (`src/outbound/lookup-gate.ts`): a total cap, one lookup per registrable domain at a
 * time, one call for concurrent lookups of a name, domains in turn, and refusals past the waiting bound and the
 * longest wait. The resolver is the test's: it answers each name when the test says.
 */
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { describe, it } from 'node:test';
import { LookupGate, type ResolveAll } from '../../src/outbound/lookup-gate.js';

/** A resolver that records each call and answers it when `answer(name)` is called. */
function heldResolver(): { resolve: ResolveAll; calls: string[]; answer(name: string, address?: string): void } {
  const calls: string[] = [];
  const held = new Map<string, ((err: NodeJS.ErrnoException | null, a: LookupAddress[]) => void)[]>();
  return {
    calls,
    resolve: (hostname, _family, cb) => {
      calls.push(hostname);
      held.set(hostname, [...(held.get(hostname) ?? []), cb]);
    },
    answer(name, address = '192.0.2.1') {
      const cbs = held.get(name) ?? [];
      assert.ok(cbs.length > 0, `${name} is at the resolver`);
      held.delete(name);
      for (const cb of cbs) cb(null, [{ address, family: 4 }]);
    },
  };
}

/** Looks `name` up through `gate`; the promise settles with the addresses or the error. */
const look = (gate: LookupGate, name: string) =>
  new Promise<{ err: NodeJS.ErrnoException | null; addresses: LookupAddress[] }>((resolve) =>
    gate.lookup(name, 0, (err, addresses) => resolve({ err, addresses })),
  );

describe('turns at the system resolver', () => {
  it('makes one call for concurrent lookups of one name and answers every caller', async () => {
    const r = heldResolver();
    const gate = new LookupGate(r.resolve, { maxInFlight: 3, maxWaiting: 10, waitMs: 10_000 });
    const answers = [look(gate, 'a.example.com'), look(gate, 'A.example.com'), look(gate, 'a.example.com')];
    assert.deepEqual(r.calls, ['a.example.com']);
    r.answer('a.example.com');
    for (const a of await Promise.all(answers)) {
      assert.equal(a.err, null);
      assert.deepEqual(a.addresses, [{ address: '192.0.2.1', family: 4 }]);
    }
    assert.deepEqual(gate.load, { running: 0, waiting: 0 });
  });

  it('holds one lookup at a time per registrable domain, so a slow domain holds one turn while others go', async () => {
    const r = heldResolver();
    const gate = new LookupGate(r.resolve, { maxInFlight: 2, maxWaiting: 10, waitMs: 10_000 });
    const slow = ['a.slow.example', 'b.slow.example', 'c.slow.example'].map((n) => look(gate, n));
    const uk = [look(gate, 'x.one.co.uk'), look(gate, 'y.two.co.uk')];
    // one turn for slow.example; one.co.uk has the other; two.co.uk is another domain (the suffix is co.uk) but waits: 2 in flight
    assert.deepEqual(r.calls, ['a.slow.example', 'x.one.co.uk']);
    assert.deepEqual(gate.load, { running: 2, waiting: 3 });
    r.answer('x.one.co.uk');
    // the free turn goes to the first domain waiting with none at the resolver: two.co.uk, not slow.example
    assert.deepEqual(r.calls, ['a.slow.example', 'x.one.co.uk', 'y.two.co.uk']);
    r.answer('y.two.co.uk');
    assert.equal((await uk[0])!.err, null);
    assert.equal((await uk[1])!.err, null);
    assert.deepEqual(gate.load, { running: 1, waiting: 2 });
    r.answer('a.slow.example');
    assert.deepEqual(r.calls.slice(3), ['b.slow.example']);
    r.answer('b.slow.example');
    r.answer('c.slow.example');
    for (const a of await Promise.all(slow)) assert.equal(a.err, null);
  });

  it('gives turns to waiting domains in rotation', async () => {
    const r = heldResolver();
    const gate = new LookupGate(r.resolve, { maxInFlight: 1, maxWaiting: 10, waitMs: 10_000 });
    const all = ['first.test', 'a1.a.test', 'a2.a.test', 'b1.b.test', 'b2.b.test'].map((n) => look(gate, n));
    r.answer('first.test');
    r.answer('a1.a.test');
    r.answer('b1.b.test');
    r.answer('a2.a.test');
    r.answer('b2.b.test');
    assert.deepEqual(r.calls, ['first.test', 'a1.a.test', 'b1.b.test', 'a2.a.test', 'b2.b.test']);
    for (const a of await Promise.all(all)) assert.equal(a.err, null);
  });

  it('refuses at once past the waiting bound, and after the longest wait, with EAI_AGAIN', async () => {
    const r = heldResolver();
    const gate = new LookupGate(r.resolve, { maxInFlight: 1, maxWaiting: 2, waitMs: 50 });
    const held = look(gate, 'held.test');
    const waiting = [look(gate, 'w1.test'), look(gate, 'w2.test')];
    const refused = await look(gate, 'w3.test');
    assert.equal(refused.err?.code, 'EAI_AGAIN');
    assert.match(refused.err!.message, /w3\.test not made: 2 lookups are waiting/);
    // a caller joining a waiting name is no new lookup: it waits with it
    const joined = look(gate, 'w1.test');
    for (const a of [...(await Promise.all(waiting)), await joined]) {
      assert.equal(a.err?.code, 'EAI_AGAIN');
      assert.match(a.err!.message, /no turn within 50 ms/);
    }
    assert.deepEqual(gate.refused, { full: 1, waited: 2 });
    assert.deepEqual(gate.load, { running: 1, waiting: 0 });
    r.answer('held.test');
    assert.equal((await held).err, null);
    // a name whose wait expired is looked up anew later, and the turn is free now
    const again = look(gate, 'w1.test');
    r.answer('w1.test');
    assert.equal((await again).err, null);
    assert.deepEqual(r.calls, ['held.test', 'w1.test']);
  });

  it("passes the resolver's error to every caller and goes on with the next", async () => {
    const calls: string[] = [];
    const gate = new LookupGate(
      (hostname, _f, cb) => {
        calls.push(hostname);
        setImmediate(() => cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []));
      },
      { maxInFlight: 1, maxWaiting: 10, waitMs: 10_000 },
    );
    const [a, b, c] = await Promise.all([look(gate, 'x.test'), look(gate, 'x.test'), look(gate, 'y.test')]);
    assert.equal(a!.err?.code, 'ENOTFOUND');
    assert.equal(b!.err?.code, 'ENOTFOUND');
    assert.equal(c!.err?.code, 'ENOTFOUND');
    assert.deepEqual(calls, ['x.test', 'y.test']);
  });
});
