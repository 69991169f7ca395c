/** `GET /resolve/{did}` of a registered DID (http-api.md §3.1): req/s, p50, p99. */
import { enc, type BenchContext, type Figure } from '../context.js';

export async function resolveFigure(ctx: BenchContext): Promise<Figure> {
  const { settings: s, service } = ctx;
  const did = ctx.recipients.store.did;
  const path = `/resolve/${enc(did)}`;
  const probe = await fetch(`${service.urls.directory}${path}`);
  if (probe.status !== 200) throw new Error(`resolve probe answered ${probe.status}: ${(await probe.text()).slice(0, 300)}`);
  const load = await ctx.load(
    {
      name: 'resolve',
      url: service.urls.directory,
      connections: s.connections,
      durationS: s.durationS,
      warmupS: s.warmupS,
      request: { kind: 'static', method: 'GET', path },
    },
    service.pid,
  );
  return {
    id: 'resolve',
    title: 'Directory: resolve a registered DID',
    value: load.rate,
    unit: 'req/s',
    reference: 'hello_world_rps',
    target: { op: '>=', ratio: 0.6 },
    extra: { p50_ms: load.latency_ms.p50, p99_ms: load.latency_ms.p99 },
    load,
  };
}
