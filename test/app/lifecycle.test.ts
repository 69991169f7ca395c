import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ComponentStopError, Lifecycle, type Component } from '../../src/app/lifecycle.js';

/** A component that records its starts and stops in `log`; `fail` makes that step throw. */
function part(log: string[], name: string, o: { start?: boolean; failStart?: boolean; failStop?: boolean } = {}): Component {
  return {
    name,
    ...(o.start === false
      ? {}
      : {
          start: async () => {
            await Promise.resolve();
            if (o.failStart === true) throw new Error(`${name} cannot start`);
            log.push(`start ${name}`);
          },
        }),
    stop: async () => {
      await Promise.resolve();
      log.push(`stop ${name}`);
      if (o.failStop === true) throw new Error(`${name} cannot stop`);
    },
  };
}

describe('Lifecycle', () => {
  it('starts components in the order they were added and stops them in reverse', async () => {
    const log: string[] = [];
    const lc = new Lifecycle();
    for (const name of ['a', 'b', 'c']) lc.add(part(log, name));
    await lc.start();
    assert.deepEqual(log, ['start a', 'start b', 'start c']);
    assert.equal(lc.isRunning('b'), true);
    await lc.stop();
    assert.deepEqual(log.slice(3), ['stop c', 'stop b', 'stop a']);
    assert.equal(lc.isRunning('b'), false);
  });

  it('counts a component without start as running once added, and stops it with the others in reverse', async () => {
    const log: string[] = [];
    const lc = new Lifecycle();
    lc.add(part(log, 'store', { start: false }));
    lc.add(part(log, 'sweeper'));
    assert.equal(lc.isRunning('store'), true);
    assert.equal(lc.isRunning('sweeper'), false);
    await lc.start();
    await lc.stop();
    assert.deepEqual(log, ['start sweeper', 'stop sweeper', 'stop store']);
  });

  it('stops only the opened components when it never started', async () => {
    const log: string[] = [];
    const lc = new Lifecycle();
    lc.add(part(log, 'store', { start: false }));
    lc.add(part(log, 'listener'));
    await lc.stop();
    assert.deepEqual(log, ['stop store']);
  });

  it('on a failing start, stops what started in reverse, never the failed one or those after it, and rethrows', async () => {
    const log: string[] = [];
    const told: unknown[] = [];
    const lc = new Lifecycle((err) => told.push(err));
    lc.add(part(log, 'lock', { start: false }));
    lc.add(part(log, 'a'));
    lc.add(part(log, 'b'));
    lc.add(part(log, 'c', { failStart: true }));
    lc.add(part(log, 'd'));
    await assert.rejects(lc.start(), /c cannot start/);
    assert.deepEqual(log, ['start a', 'start b', 'stop b', 'stop a', 'stop lock']);
    assert.deepEqual(told, []);
    await lc.stop();
    assert.equal(log.length, 5, 'a second stop stops nothing again');
  });

  it('runs every stop when one fails and rethrows the first failure, naming its component', async () => {
    const log: string[] = [];
    const lc = new Lifecycle();
    lc.add(part(log, 'a', { failStop: true }));
    lc.add(part(log, 'b', { failStop: true }));
    lc.add(part(log, 'c'));
    await lc.start();
    const err = await lc.stop().then(
      () => assert.fail('stop resolved'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ComponentStopError);
    assert.equal(err.component, 'b');
    assert.match(err.message, /stopping b failed: b cannot stop/);
    assert.deepEqual(log.slice(3), ['stop c', 'stop b', 'stop a']);
  });

  it('tells about the stops that fail while a failed start is undone, and still rethrows the start error', async () => {
    const log: string[] = [];
    const told: unknown[] = [];
    const lc = new Lifecycle((err) => told.push(err));
    lc.add(part(log, 'a', { failStop: true }));
    lc.add(part(log, 'b', { failStart: true }));
    await assert.rejects(lc.start(), /b cannot start/);
    assert.equal(told.length, 1);
    assert.ok(told[0] instanceof ComponentStopError && told[0].component === 'a');
  });

  it('stops once however often stop() is called, concurrently or after', async () => {
    const log: string[] = [];
    const lc = new Lifecycle();
    lc.add(part(log, 'a'));
    lc.add(part(log, 'b'));
    await lc.start();
    const first = lc.stop();
    assert.equal(lc.stop(), first);
    await Promise.all([first, lc.stop()]);
    await lc.stop();
    assert.deepEqual(log, ['start a', 'start b', 'stop b', 'stop a']);
  });

  it('starts once, and refuses new components and a start once stopping', async () => {
    const log: string[] = [];
    const lc = new Lifecycle();
    lc.add(part(log, 'a'));
    await lc.start();
    await assert.rejects(lc.start(), /started already/);
    await lc.stop();
    assert.throws(() => lc.add(part(log, 'late')), /cannot add late: the lifecycle is stopping/);
    const stopped = new Lifecycle();
    await stopped.stop();
    await assert.rejects(stopped.start(), /stopping/);
  });

  it('a stop during a start waits for the component being started, stops it too, and fails the start', async () => {
    const log: string[] = [];
    const lc = new Lifecycle();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    lc.add(part(log, 'a'));
    lc.add({
      name: 'slow',
      start: async () => {
        await gate;
        log.push('start slow');
      },
      stop: () => void log.push('stop slow'),
    });
    lc.add(part(log, 'never'));
    const starting = lc.start();
    await new Promise((resolve) => setImmediate(resolve));
    const stopping = lc.stop();
    release();
    await assert.rejects(starting, /stopped while slow was starting/);
    await stopping;
    assert.deepEqual(log, ['start a', 'start slow', 'stop slow', 'stop a']);
  });
});
