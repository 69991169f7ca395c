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
  terminate(): void {}
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
    sessions.add('did:platform:aaa', 'laptop', a as unknown as WebSocket);
    sessions.add('did:platform:aaa', 'phone', b as unknown as WebSocket);
    sessions.add('did:platform:bbb', 'laptop', other as unknown as WebSocket);
    const fanout = new InProcessLiveFanout(sessions);
    const text = '{"to":"did:platform:aaa","payload":{"ciphertext_b64":"AAAA"},"x":"é"}';

    assert.equal(await fanout.push('did:platform:aaa', text), 2);
    assert.deepEqual(a.sent.slice(1), [text]);
    assert.deepEqual(b.sent.slice(1), [text]);
    assert.deepEqual(other.sent.length, 1, 'another DID receives nothing');

    b.close();
    assert.equal(await fanout.push('did:platform:aaa', 'second'), 1);
    assert.deepEqual(a.sent.slice(1), [text, 'second']);
    assert.deepEqual(b.sent.slice(1), [text]);
    assert.equal(await fanout.push('did:platform:none', text), 0);
    await fanout.close();
    await sessions.closeAll(0);
  });
});
