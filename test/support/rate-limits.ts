/** Small request rate limits for tests: only the budgets given are on. */
import { RATE_BUDGETS, RateLimits, type LimiterFactory, type RateBudget, type RateBudgetName } from '../../src/http/rate-limit.js';

export function smallRateLimits(
  budgets: Partial<Record<RateBudgetName, RateBudget>>,
  opts: { trustedProxies?: string[]; maxKeys?: number; factory?: LimiterFactory } = {},
): RateLimits {
  const all = Object.fromEntries(RATE_BUDGETS.map((b) => [b, budgets[b] ?? null])) as Record<RateBudgetName, RateBudget | null>;
  return new RateLimits({ budgets: all, trustedProxies: opts.trustedProxies ?? [], maxKeys: opts.maxKeys ?? 1000 }, opts.factory);
}
