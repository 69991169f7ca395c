/** The explorer's pure helpers: the delivery-plan graph layout and the metrics text it charts. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { layoutPlan, STEP_HEIGHT, STEP_WIDTH } from '../../src/explorer/ui/plan-layout.js';
import { sumByName } from '../../src/explorer/ui/prom-text.js';

const step = (id: string, operation = 'Forward') => ({ id, operation, detail: '' });

describe('plan layout', () => {
  it('puts steps in columns by distance from the entry, rows within a column, edges from right side to left side', () => {
    const g = layoutPlan(
      'a',
      [step('a'), step('b', 'Store'), step('c', 'Archive'), step('d', 'Store')],
      [
        { from: 'a', to: 'b', trigger: 'Failure', mode: 'Next' },
        { from: 'a', to: 'c', trigger: 'Always', mode: 'Fork' },
        { from: 'b', to: 'd', trigger: 'Success', mode: 'Next' },
      ],
    );
    const at = (id: string) => g.steps.find((s) => s.id === id)!;
    assert.deepEqual(
      ['a', 'b', 'c', 'd'].map((id) => at(id).column),
      [0, 1, 1, 2],
    );
    assert.ok(at('a').entry && !at('b').entry);
    assert.equal(at('b').x, at('c').x);
    assert.ok(at('c').y > at('b').y, 'second row of the column');
    assert.ok(at('d').x > at('b').x);
    const ab = g.transitions[0]!;
    assert.ok(ab.path.startsWith(`M${at('a').x + STEP_WIDTH},${at('a').y + STEP_HEIGHT / 2} `));
    assert.ok(ab.path.endsWith(` ${at('b').x},${at('b').y + STEP_HEIGHT / 2}`));
    for (const s of g.steps) assert.ok(s.x + STEP_WIDTH <= g.width && s.y + STEP_HEIGHT <= g.height, 'inside the drawing');
  });

  it('loops an edge inside one column under the steps; unreachable steps go last; unknown ends are left out', () => {
    const g = layoutPlan(
      'a',
      [step('a'), step('b'), step('c'), step('lost')],
      [
        { from: 'a', to: 'b', trigger: 'Success', mode: 'Next' },
        { from: 'a', to: 'c', trigger: 'Failure', mode: 'Next' },
        { from: 'b', to: 'c', trigger: 'Always', mode: 'Fork' },
        { from: 'c', to: 'ghost', trigger: 'Always', mode: 'Next' },
      ],
    );
    assert.equal(g.steps.find((s) => s.id === 'lost')!.column, 2);
    assert.equal(g.transitions.length, 3);
    const loop = g.transitions[2]!;
    const bottom = Math.max(...g.steps.map((s) => s.y + STEP_HEIGHT));
    assert.ok(loop.labelY > bottom, 'below every step');
    assert.ok(g.height > loop.labelY);
  });

  it('draws an empty plan or a missing entry step without failing', () => {
    assert.deepEqual(layoutPlan('x', [], []).steps, []);
    assert.equal(layoutPlan('x', [step('a')], []).steps[0]!.column, 0);
  });
});

describe('metrics text', () => {
  it('sums every sample of a name across labels; skips comments, blank lines and non-numbers', () => {
    const m = sumByName(
      [
        '# HELP ddn_http_requests_total Requests',
        '# TYPE ddn_http_requests_total counter',
        'ddn_http_requests_total{role="directory",route="/resolve/:did",status="200"} 5',
        'ddn_http_requests_total{role="directory",route="/blocks/:number",status="404"} 2',
        '',
        'ddn_ledger_head_block 42',
        'process_resident_memory_bytes 1.5e8',
        'odd_value NaN',
      ].join('\n'),
    );
    assert.equal(m.get('ddn_http_requests_total'), 7);
    assert.equal(m.get('ddn_ledger_head_block'), 42);
    assert.equal(m.get('process_resident_memory_bytes'), 150_000_000);
    assert.equal(m.has('odd_value'), false);
  });
});
