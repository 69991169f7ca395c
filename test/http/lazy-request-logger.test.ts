/** A request's logger made on its first line (src/http/lazy-request-logger.ts). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { LazyRequestLogger } from '../../src/http/lazy-request-logger.js';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  const parent = pino({ level }, stream);
  let children = 0;
  const child = parent.child;
  parent.child = function (this: typeof parent, ...args: Parameters<typeof child>) {
    children++;
    return child.apply(this, args);
  } as typeof child;
  return { parent, lines, children: () => children };
}

describe('LazyRequestLogger', () => {
  it('makes its child on the first written line, once, and every line carries the bindings', () => {
    const { parent, lines, children } = capture('info');
    const log = new LazyRequestLogger(parent, { reqId: 'r-1' }, {});
    assert.equal(log.level, 'info');
    assert.equal(children(), 0);
    log.debug('below the level');
    assert.equal(children(), 0, 'a line below the level makes no child');
    log.info({ a: 1 }, 'first');
    log.warn('second');
    assert.equal(children(), 1);
    assert.deepEqual(
      lines.map((l) => [l.msg, l.reqId, l.level]),
      [
        ['first', 'r-1', 30],
        ['second', 'r-1', 40],
      ],
    );
    assert.equal(lines[0]!.a, 1);
    const nested = log.child({ step: 'x' });
    nested.error('third');
    assert.equal(lines[2]!.reqId, 'r-1');
    assert.equal(lines[2]!.step, 'x');
  });

  it('a level set on it applies to its own lines', () => {
    const { parent, lines } = capture('info');
    const log = new LazyRequestLogger(parent, { reqId: 'r-2' }, {});
    log.level = 'debug';
    log.debug('now written');
    assert.equal(log.level, 'debug');
    assert.equal(parent.level, 'info');
    assert.deepEqual(
      lines.map((l) => l.msg),
      ['now written'],
    );
  });
});
