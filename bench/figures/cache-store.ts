/**
 * `POST /cache/store` (http-api.md §11.1) of fresh envelopes: 1 KiB (req/s, p99) and 1 MiB (MiB/s); and 1 KiB into
 * a Cache in its own process, which asks the combined node's Directory over HTTP (information).
 */
import { type BenchContext, type Figure } from '../context.js';
import { registerRecipients } from '../fixtures.js';
import { measureFloor } from '../floors.js';
import type { LoadJob, LoadResult } from '../jobs.js';
import type { ServiceProcess } from '../service.js';

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

/**
 * `cache_store_1kib_split` (information): the 1 KiB store against a Cache-only process (`--roles cache
 * --directory-url <the node's Directory>`), as a deployment that scales the Cache out runs it. It asks the Directory
 * over HTTP for the recipient's resolution, and reuses the answer for `--directory-view-ttl-ms`. Both processes' CPU
 * is counted.
 */
export async function storeSplitFigure(ctx: BenchContext, startSplitCache: () => Promise<ServiceProcess>): Promise<Figure> {
  const figure: Figure = {
    id: 'cache_store_1kib_split',
    title: 'Cache in its own process: store 1 KiB envelopes (the Directory asked over HTTP)',
    value: null,
    unit: 'req/s',
    reference: 'hello_world_rps',
  };
  let cache: ServiceProcess;
  try {
    cache = await startSplitCache();
  } catch (err) {
    figure.unavailable = `a Cache-only process could not start (--roles cache --directory-url): ${(err as Error).message.slice(0, 200)}`;
    return figure;
  }
  try {
    const [r] = await registerRecipients(ctx.service.urls.directory, cache.urls.cache, ctx.profile, 1);
    const job: LoadJob = {
      ...storeJob(ctx, 'cache-store-1KiB-split', ctx.settings.envelopeBytes, ctx.settings.connections),
      url: cache.urls.cache,
      request: { kind: 'envelope', path: '/cache/store', to: r!.did, bodyBytes: ctx.settings.envelopeBytes },
    };
    const load = await ctx.load(job, [cache.pid, ctx.service.pid]);
    checkAllAccepted(load, 'store 1 KiB into a Cache-only process');
    const [cacheCpu, nodeCpu] = load.target_cpu?.processes ?? [];
    const perRequest = (cpuMs: number | undefined) => (cpuMs === undefined ? undefined : Math.round((cpuMs * 1000) / load.ok));
    Object.assign(figure, {
      value: load.rate,
      extra: { p50_ms: load.latency_ms.p50, p99_ms: load.latency_ms.p99 },
      load,
      details: {
        processes: 'Cache-only process + combined node (its Directory answers), CPU summed',
        cache_process: { ...cacheCpu, cpu_per_request_us: perRequest(cacheCpu?.cpu_ms) },
        directory_node: { ...nodeCpu, cpu_per_request_us: perRequest(nodeCpu?.cpu_ms) },
      },
    });
  } finally {
    await cache.stop();
  }
  return figure;
}
