/**
 * The in-process live fan-out (src/relay/live-fanout.ts): pushes to this process's sessions only, reports how
 * many received the envelope, and is what base-DID delivery calls after the durable store.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';
import { InProcessLiveFanout } from '../../src/relay/live-fanout.js';
import { DEFAULT_LIVE_LIMITS, LiveSessions } from '../../src/relay/live-sessions.js';

/** Just enough of a ws socket for LiveSessions: records what is sent. */
class FakeSocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  bufferedAmount = 0;
  readonly sent: string[] = [];
  send(text: string): void {
    this.sent.push(text);
  }
  ping(): void {}
  terminate(): void {
    this.terminated = true;
    this.readyState = 3;
    this.emit('close');
  }
  terminated = false;
  close(): void {
    this.readyState = 3;
    this.emit('close');
  }
}

describe('InProcessLiveFanout', () => {
  it('pushes the exact text once to every open session of the DID on this process and reports the count', async () => {
    const sessions = new LiveSessions({ ...DEFAULT_LIVE_LIMITS, pingIntervalMs: 3_600_000 });
    const a = new FakeSocket();
    const b = new FakeSocket();
    const other = new FakeSocket();
    sessions.add('did:platform:aaa', 'laptop', a as unknown as WebSocket, true);
    sessions.add('did:platform:aaa', 'phone', b as unknown as WebSocket, true);
    sessions.add('did:platform:bbb', 'laptop', other as unknown as WebSocket, true);
    const fanout = new InProcessLiveFanout(sessions);
    const text = '{"to":"did:platform:aaa","payload":{"ciphertext_b64":"AAAA"},"x":"é"}';

    assert.deepEqual(await fanout.push('did:platform:aaa', text), { sessions: 2, authenticated: 2 });
    assert.deepEqual(a.sent.slice(1), [text]);
    assert.deepEqual(b.sent.slice(1), [text]);
    assert.deepEqual(other.sent.length, 1, 'another DID receives nothing');

    b.close();
    assert.deepEqual(await fanout.push('did:platform:aaa', 'second'), { sessions: 1, authenticated: 1 });
    assert.deepEqual(a.sent.slice(1), [text, 'second']);
    assert.deepEqual(b.sent.slice(1), [text]);
    assert.deepEqual(await fanout.push('did:platform:none', text), { sessions: 0, authenticated: 0 });
    await fanout.close();
    await sessions.closeAll(0);
  });

  it("tells its watcher when a DID's first session opens and its last one goes; a process alone reaches nobody elsewhere", async () => {
    const sessions = new LiveSessions({ ...DEFAULT_LIVE_LIMITS, pingIntervalMs: 3_600_000 });
    const told: string[] = [];
    sessions.watch((did) => told.push(`${did}:${sessions.count(did)}`));
    const a = new FakeSocket();
    const b = new FakeSocket();
    const pending = new FakeSocket();
    sessions.add('did:platform:aaa', 'laptop', a as unknown as WebSocket, true);
    sessions.add('did:platform:aaa', 'phone', b as unknown as WebSocket, true);
    const proof = sessions.addPending('did:platform:ccc', 'tablet', pending as unknown as WebSocket);
    assert.deepEqual(told, ['did:platform:aaa:1'], 'the second session of a DID, and a pending one, change nothing');
    proof?.open();
    assert.deepEqual([...sessions.dids()], ['did:platform:aaa', 'did:platform:ccc']);
    a.close();
    b.close();
    assert.deepEqual(told, ['did:platform:aaa:1', 'did:platform:ccc:1', 'did:platform:aaa:0']);
    assert.deepEqual(await new InProcessLiveFanout(sessions).pushElsewhere(), { sessions: 0, authenticated: 0 });
    await sessions.closeAll(0);
    assert.deepEqual(told.at(-1), 'did:platform:ccc:0', 'closing all: every DID went');
    assert.deepEqual([...sessions.dids()], []);
  });

  it('counts proof-less sessions apart; a pending session receives nothing; over the total buffer cap the furthest behind go', async () => {
    const sessions = new LiveSessions({ ...DEFAULT_LIVE_LIMITS, maxBufferedBytes: 1000, maxTotalBufferedBytes: 1500, pingIntervalMs: 3_600_000 });
    const did = 'did:platform:aaa';
    const owner = new FakeSocket();
    const anon = new FakeSocket();
    const waiting = new FakeSocket();
    sessions.add(did, 'owner', owner as unknown as WebSocket, true);
    sessions.add(did, 'anon', anon as unknown as WebSocket, false);
    const pending = sessions.addPending(did, 'browser', waiting as unknown as WebSocket);
    assert.equal(sessions.total(), 3);
    assert.equal(sessions.count(did), 2, 'a pending session is not open');
    assert.deepEqual(sessions.push(did, 'x'.repeat(100)), { sessions: 2, authenticated: 1 });
    assert.deepEqual(waiting.sent, [], 'nothing, not even the welcome, before the proof');
    pending!.open();
    assert.equal(waiting.sent.length, 1, 'the welcome once opened');

    // owner is 1200 bytes behind (over its 1000), anon 900: owner is closed at the next push
    owner.bufferedAmount = 1200;
    anon.bufferedAmount = 900;
    assert.deepEqual(sessions.push(did, 'y'.repeat(100)), { sessions: 2, authenticated: 1 });
    assert.ok(owner.terminated, 'a session over its own cap is terminated');
    assert.equal(sessions.count(did), 2);
    // anon 900 + waiting 700 behind: 1600 + 100 is over the total of 1500, so anon (furthest behind) goes
    waiting.bufferedAmount = 700;
    assert.deepEqual(sessions.push(did, 'z'.repeat(100)), { sessions: 1, authenticated: 1 });
    assert.ok(anon.terminated && !waiting.terminated);
    assert.equal(sessions.total(), 1);
    await sessions.closeAll(0);
  });
});
