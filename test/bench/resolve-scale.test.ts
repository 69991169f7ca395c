/** The registration figure at scale (bench/figures/resolve-scale.ts): no value from a window that was refused. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { registrationsAnswered } from '../../bench/figures/resolve-scale.js';
import type { LoadResult } from '../../bench/jobs.js';

const window = (rate: number, non2xx: number): LoadResult => ({
  name: 'register',
  connections: 8,
  rate,
  ok: rate * 5,
  non2xx,
  errors: 0,
  timeouts: 0,
  statuses: non2xx > 0 ? { '202': rate * 5, '409': non2xx } : { '202': rate * 5 },
  duration_s: 5,
  latency_ms: { p50: 1, p90: 2, p99: 3, max: 4, mean: 1 },
  sent_bytes_per_s: 1,
  loadgen_cpu: { cpu_ms: 1, wall_ms: 5000, cores: 0 },
});

describe('registrationsAnswered', () => {
  it("is the big node's rate when both windows were answered 2xx only", () => {
    assert.deepEqual(registrationsAnswered(window(4000, 0), window(2800, 0)), { value: 2800 });
  });
  it('is unavailable, with the counts, when a window met other answers (its pre-signed registrations ran out)', () => {
    const r = registrationsAnswered(window(4000, 0), window(6000, 12212));
    assert.equal(r.value, null);
    assert.match(r.unavailable ?? '', /12212 registrations answered other than 2xx \(2k 0, big 12212\)/);
  });
});
