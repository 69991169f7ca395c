/** `POST /cache/store` (http-api.md §11.1) of fresh envelopes: 1 KiB (req/s, p99) and 1 MiB (MiB/s). */
import { type BenchContext, type Figure } from '../context.js';
import { measureFloor } from '../floors.js';
import type { LoadJob, LoadResult } from '../jobs.js';

function storeJob(ctx: BenchContext, name: string, bodyBytes: number, connections: number): LoadJob {
  const { settings: s, service } = ctx;
  return {
    name,
    url: service.urls.cache,
    connections,
    durationS: s.durationS,
    warmupS: s.warmupS,
    request: { kind: 'envelope', path: '/cache/store', to: ctx.recipients.store.did, bodyBytes },
  };
}

export function checkAllAccepted(load: LoadResult, what: string): void {
  if (load.ok === 0) throw new Error(`${what}: no request succeeded (${JSON.stringify(load.statuses)}, errors ${load.errors})`);
}

export async function store1KiBFigure(ctx: BenchContext): Promise<Figure> {
  const job = storeJob(ctx, 'cache-store-1KiB', ctx.settings.envelopeBytes, ctx.settings.connections);
  const load = await ctx.load(job, ctx.service.pid);
  checkAllAccepted(load, 'store 1 KiB');
  await ctx.settle('store_floor');
  const floor = await measureFloor(ctx, 'store', job);
  return {
    id: 'cache_store_1kib',
    title: 'Cache: store 1 KiB envelopes',
    value: load.rate,
    unit: 'req/s',
    reference: 'hello_world_rps',
    target: { op: '>=', ratio: 0.25 },
    extra: { p50_ms: load.latency_ms.p50, p99_ms: load.latency_ms.p99 },
    load,
    floor,
  };
}

export async function store1MiBFigure(ctx: BenchContext): Promise<Figure> {
  const bytes = ctx.settings.bigEnvelopeBytes;
  const load = await ctx.load(storeJob(ctx, 'cache-store-1MiB', bytes, ctx.settings.bigConnections), ctx.service.pid);
  checkAllAccepted(load, 'store 1 MiB');
  const mibPerS = (load.rate * bytes) / 2 ** 20;
  return {
    id: 'cache_store_1mib',
    title: 'Cache: store 1 MiB envelopes',
    value: Math.round(mibPerS * 10) / 10,
    unit: 'MiB/s',
    extra: { req_per_s: load.rate, p50_ms: load.latency_ms.p50, p99_ms: load.latency_ms.p99 },
    load,
  };
}
