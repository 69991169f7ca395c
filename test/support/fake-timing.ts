/** Manual time for the retry and poll loops: `sleep` advances `now` at once and records the pause. */
import type { RetryTiming } from '../../src/base/retry.js';

export function fakeTiming(startMs = 1_700_000_000_000): RetryTiming & { slept: number[] } {
  let now = startMs;
  const slept: number[] = [];
  return {
    slept,
    now: () => now,
    sleep: async (ms) => {
      slept.push(ms);
      now += ms;
    },
  };
}
