/** Who gets an export stream session (src/directory/feed-stream-slots.ts): shares, the total, and displacement. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admitToStream, type FeedStreamSlot } from '../../src/directory/feed-stream-slots.js';

const limits = { maxSessions: 4, maxSessionsPerAddress: 2, displaceAfterMs: 5000 };
const slot = (address: string, awaitingPongSince?: number): FeedStreamSlot => ({ address, awaitingPongSince });

describe('export stream slots', () => {
  it('admits while the address has its share and the stream has room', () => {
    assert.deepEqual(admitToStream([], 'a', 0, limits), { admitted: true });
    assert.deepEqual(admitToStream([slot('a'), slot('b')], 'a', 0, limits), { admitted: true });
  });

  it("refuses beyond the address's share and beyond the total, when every holder answered its pings", () => {
    assert.deepEqual(admitToStream([slot('a'), slot('a')], 'a', 0, limits), { admitted: false, full: 'address' });
    assert.deepEqual(admitToStream([slot('a'), slot('b'), slot('c'), slot('d')], 'e', 0, limits), { admitted: false, full: 'stream' });
  });

  it('lets a newcomer take the place of the session whose ping has gone unanswered longest, once for 5 s', () => {
    const young = slot('b', 9000);
    const old = slot('c', 1000);
    const older = slot('d', 500);
    const slots = [slot('a'), young, old, older];
    // at 5499 ms no ping has been unanswered for 5 s yet
    assert.deepEqual(admitToStream(slots, 'e', 5499, limits), { admitted: false, full: 'stream' });
    assert.equal((admitToStream(slots, 'e', 5500, limits) as { displace?: FeedStreamSlot }).displace, older);
    assert.equal((admitToStream(slots, 'e', 100_000, limits) as { displace?: FeedStreamSlot }).displace, older);
  });

  it("within an address's share, only that address's sessions give their place", () => {
    const mine = slot('a', 0);
    const theirs = slot('b', 0);
    assert.equal((admitToStream([mine, slot('a'), theirs], 'a', 10_000, limits) as { displace?: FeedStreamSlot }).displace, mine);
    assert.deepEqual(admitToStream([slot('a'), slot('a'), theirs], 'a', 10_000, limits), { admitted: false, full: 'address' });
  });
});
