/** The event dispatcher's queue is bounded (src/events/dispatcher.ts): a stalled policy source cannot hold events without limit. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/base/clock.js';
import { EventDispatcher, type EventDispatcherDeps } from '../../src/events/dispatcher.js';
import type { EventScope } from '../../src/events/policy-source.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import type { RelayEvent } from '../../src/relay/service.js';
import { relayAccepted } from './event-support.js';

const event = (n: number, tag: string | null = null): RelayEvent => ({ ...relayAccepted('did:platform:bob', n), tag });

describe('EventDispatcher queue bound', () => {
  it('drops events while its queue is full, and takes them again once it drains', async () => {
    const asked: EventScope[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const deps = {
      profile: PLATFORM,
      clock: new ManualClock(0),
      policies: {
        policy: async (scope: EventScope) => {
          asked.push(scope);
          await gate;
          return null;
        },
      },
    } as unknown as EventDispatcherDeps;
    const d = new EventDispatcher(deps, { maxQueued: 2 });
    for (let i = 0; i < 5; i++) d.onEvent(event(i));
    d.onEvent(event(9, PLATFORM.controlTag));
    assert.equal(d.droppedEvents, 3, 'two held, three dropped; a control envelope is skipped, not counted');
    release();
    await d.idle();
    assert.equal(asked.length, 2);
    d.onEvent(event(5));
    await d.idle();
    assert.equal(asked.length, 3, 'room again once drained');
    assert.equal(d.droppedEvents, 3);
  });
});
