/**
 * What a PostgreSQL Cache process remembers of its quota leases (`src/store/postgres/mailbox-leases.ts`): one
 * entry per lane and recipient while it may still be spent, not one per recipient ever stored into. Driven
 * through a fake client (counts and the requests' `nowMs`), so it needs no PostgreSQL.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import type { PutRequest } from '../../src/cache/mailbox-store.js';
import { LEASE_MS, LEASE_WANT_BYTES, QuotaLeases } from '../../src/store/postgres/mailbox-leases.js';
import { entry, NOW, WINDOW } from './mailbox-fixtures.js';

/** A client that grants every lease in full and takes every leased batch; counts the leases it granted. */
function fakeClient(): { client: pg.ClientBase; taken: () => number } {
  let taken = 0;
  const query = (q: string | { text: string }) => {
    if ((typeof q === 'string' ? q : q.text).includes('cache_take_lease')) {
      taken++;
      return Promise.resolve({ rows: [{ g: String(LEASE_WANT_BYTES) }] });
    }
    return Promise.resolve({ rows: [] });
  };
  return { client: { query } as unknown as pg.ClientBase, taken: () => taken };
}

const req = (recipient: string, nowMs: number): PutRequest => ({
  entry: entry({ recipientDid: recipient }),
  nowMs,
  chunkWindowMs: WINDOW,
  claim: null,
  quotaBytes: null,
});

const store = (leases: QuotaLeases, c: pg.ClientBase, recipient: string, nowMs: number) => leases.put(c, recipient, 0, [req(recipient, nowMs)]);

describe('QuotaLeases: what a process remembers', () => {
  it('forgets the leases of recipients no longer stored into once they are due for renewal', async () => {
    const { client } = fakeClient();
    const leases = new QuotaLeases('p');
    for (let i = 0; i < 500; i++) assert.ok(await store(leases, client, `did:platform:a${i}`, NOW + i));
    assert.equal(leases.size, 500);
    // half a lease's life later every one of them is due for renewal: a lease taken then forgets them
    for (let i = 0; i < 500; i++) await store(leases, client, `did:platform:b${i}`, NOW + LEASE_MS / 2 + 1_000 + i);
    assert.equal(leases.size, 500, "the first recipients' leases are forgotten, the new ones kept");
  });

  it('keeps at most its bound, oldest forgotten first; a forgotten lease is taken again', async () => {
    const { client, taken } = fakeClient();
    const leases = new QuotaLeases('p', 100);
    for (let i = 0; i < 1_000; i++) await store(leases, client, `did:platform:${i}`, NOW);
    assert.equal(leases.size, 100);
    assert.equal(taken(), 1_000);
    // the newest is still held (no new lease), the oldest was forgotten (a new one)
    await store(leases, client, 'did:platform:999', NOW);
    assert.equal(taken(), 1_000);
    await store(leases, client, 'did:platform:0', NOW);
    assert.equal(taken(), 1_001);
    assert.equal(leases.size, 100);
  });

  it('still spends a held lease batch after batch without taking another', async () => {
    const { client, taken } = fakeClient();
    const leases = new QuotaLeases('p');
    for (let i = 0; i < 50; i++) await store(leases, client, 'did:platform:hot', NOW + i);
    assert.equal(taken(), 1);
    assert.equal(leases.size, 1);
  });
});
