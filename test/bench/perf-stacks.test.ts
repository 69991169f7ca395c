import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { areaShares, callersOf, leavesUnder, objectOf, parseAreas, parsePerfScript } from '../../bench/perf-stacks.js';

// three samples of thread 10, one of thread 811 (its id right-aligned), as `perf script -F tid,ip,sym,dso` prints them
const SCRIPT = `10 
\t         150cb91 pwrite64 ([kernel.kallsyms])
\t    7fd0ae960799 sqlite3WalFrames (/x/better_sqlite3.node)
\t    7fd0ae961a6f JS:^commitBlock file:///d/ledger-store.js:312:16 (/tmp/perf-10.map)
\t    7fd0ae961a70 JS:^advance file:///d/head.js:43:12 (/tmp/perf-10.map)
\t    7fd0ae961a71 JS:^applyReplicatedBlock file:///d/production.js:177:25 (/tmp/perf-10.map)

10 
\t    7fd0ae960799 sqlite3VdbeExec (/x/better_sqlite3.node)
\t    7fd0ae961a6f JS:^commitBlock file:///d/ledger-store.js:312:16 (/tmp/perf-10.map)

10 
\t         14ce0dc Builtins_LoadIC (/usr/bin/node)
\t    7fd0ae98f8d7 JS:*onHttpSocketReadable /n/undici/lib/dispatcher/client-h1.js:950:31 (/tmp/perf-10.map)

  811 
\t         14ce0dc epoll_pwait (/usr/lib/libc.so.6)
`;

describe('perf stacks', () => {
  it('parses samples with their thread and frames, leaf first', () => {
    const samples = parsePerfScript(SCRIPT);
    assert.deepEqual(
      samples.map((s) => [s.tid, s.frames.length]),
      [
        ['10', 5],
        ['10', 2],
        ['10', 2],
        ['811', 1],
      ],
    );
    assert.equal(samples[0]!.frames[0], 'pwrite64 ([kernel.kallsyms])');
    assert.equal(objectOf(samples[0]!.frames[2]!), 'JIT');
    assert.equal(objectOf(samples[0]!.frames[1]!), 'better_sqlite3.node');
    assert.equal(objectOf('no object'), '?');
  });

  it('charges a sample to the first area met from the leaf outwards; the rest is other', () => {
    const samples = parsePerfScript(SCRIPT).filter((s) => s.tid === '10');
    const shares = areaShares(samples, parseAreas('replica=commitBlock;sqlite=better_sqlite3'));
    // both SQLite samples are SQLite's before they are the block's; the undici one matches nothing
    assert.deepEqual(
      shares.map((a) => [a.area, Math.round(a.share * 100)]),
      [
        ['sqlite', 67],
        ['other', 33],
      ],
    );
    assert.deepEqual(shares[0]!.objects, [
      ['[kernel.kallsyms]', 1 / 3],
      ['better_sqlite3.node', 1 / 3],
    ]);
    assert.equal(areaShares(samples, parseAreas('replica=commitBlock'))[0]!.area, 'replica');
    assert.throws(() => parseAreas('nopattern'), /name=pattern/);
  });

  it('names the callers above the outermost match and the leaves under a pattern', () => {
    const samples = parsePerfScript(SCRIPT).filter((s) => s.tid === '10');
    assert.deepEqual(callersOf(samples, 'better_sqlite3', 2), [
      ['JS:^commitBlock file:///d/ledger-store.js:312:16 < JS:^advance file:///d/head.js:43:12', 1 / 3],
      ['JS:^commitBlock file:///d/ledger-store.js:312:16', 1 / 3],
    ]);
    assert.deepEqual(leavesUnder(samples, 'commitBlock'), [
      ['pwrite64', 1 / 3],
      ['sqlite3VdbeExec', 1 / 3],
    ]);
    assert.deepEqual(leavesUnder(samples, 'nothing'), []);
  });
});
