/**
 * Growth of cost: the store (1 KiB) and retrieval (signed pull) workloads on a freshly started service, once
 * over an empty mailbox database and once over one pre-filled with `prefillRows` envelopes. The figure is the
 * pre-filled throughput; its reference is the empty one from the same run.
 */
import type { BenchContext, Figure } from '../context.js';
import { storeEnvelopes } from '../fixtures.js';
import type { LoadResult } from '../jobs.js';
import type { PrefillResult } from '../prefill.js';
import { checkAllAccepted } from './cache-store.js';
import { retrievalLoad } from './retrieval.js';

/** Stops the service, replaces its Cache database (empty, or pre-filled with `rows`) and starts it again. */
export type RestartWithCache = (rows: number) => Promise<PrefillResult | null>;

interface Phase {
  store: LoadResult;
  pull: LoadResult;
  prefill: PrefillResult | null;
}

async function phase(ctx: BenchContext, restart: RestartWithCache, rows: number, label: string): Promise<Phase> {
  const prefill = await restart(rows);
  const { service, settings: s } = ctx;
  await storeEnvelopes(service.urls.cache, ctx.recipients.retrieval.did, s.mailboxSize, s.envelopeBytes);
  await ctx.settle(`growth_store_${label}`);
  const store = await ctx.load(
    {
      name: `growth-store-${label}`,
      url: service.urls.cache,
      connections: s.connections,
      durationS: s.durationS,
      warmupS: s.warmupS,
      request: { kind: 'envelope', path: '/cache/store', to: ctx.recipients.store.did, bodyBytes: s.envelopeBytes },
    },
    service.pid,
  );
  checkAllAccepted(store, `growth store (${label})`);
  await ctx.settle(`growth_pull_${label}`);
  const pull = await retrievalLoad(ctx, 'pull', `growth-pull-${label}`);
  return { store, pull, prefill };
}

export async function growthFigures(ctx: BenchContext, restart: RestartWithCache): Promise<Figure[]> {
  const rows = ctx.settings.prefillRows;
  ctx.log('growth: empty store');
  const empty = await phase(ctx, restart, 0, 'empty');
  ctx.log(`growth: ${rows.toLocaleString('en')} envelopes pre-filled`);
  const full = await phase(ctx, restart, rows, 'prefilled');
  const label = rows >= 1_000_000 ? `${rows / 1_000_000}M` : `${rows / 1000}k`;
  const mk = (id: string, what: string, e: LoadResult, f: LoadResult): Figure => ({
    id,
    title: `Growth: ${what} with ${label} envelopes stored (reference: the same on an empty store)`,
    value: f.rate,
    unit: 'req/s',
    reference: 'empty_store',
    referenceValue: e.rate,
    target: { op: '>=', ratio: 0.8 },
    extra: { empty_req_per_s: e.rate, p99_ms: f.latency_ms.p99, empty_p99_ms: e.latency_ms.p99 },
    load: f,
    details: { empty: e, prefill: full.prefill },
  });
  return [
    mk('growth_store', 'store 1 KiB', empty.store, full.store),
    mk('growth_pull', 'signed pull', empty.pull, full.pull),
  ];
}
