/**
 * Relay base-DID delivery into a Cache (http-api.md §10.3, §10.4.1): `POST /relay` of fresh 1 KiB envelopes to a
 * recipient whose document publishes the node's Cache; the Relay stores each one there before answering 202.
 *
 * - `relay_to_cache` (the figure with a target): two HTTP hops — a Relay in its own process (`--roles relay
 *   --directory-url <the node's Directory>`) stores over node-signed HTTP into the combined node's Cache. Both
 *   processes' CPU is counted.
 * - `relay_in_process` (information): the combined node alone, whose Relay stores into its own Cache in-process
 *   (§10.4.1 step 2) — one HTTP hop.
 *
 * While the Relay route is not there (404/501), or a valid envelope is not answered 202, or the split Relay cannot
 * start, a figure is reported unavailable with the reason instead of failing the run.
 */
import { enc, type BenchContext, type Figure } from '../context.js';
import { envelopeTemplate, freshEnvelope, proofHeaders } from '../envelopes.js';
import { measureFloor } from '../floors.js';
import type { LoadJob } from '../jobs.js';
import type { ServiceProcess } from '../service.js';

interface Probe {
  ok: boolean;
  status: number;
  answer: Record<string, unknown>;
  text: string;
}

async function probe(relayUrl: string, to: string, bytes: number): Promise<Probe> {
  const { body } = freshEnvelope(envelopeTemplate(to, bytes));
  const res = await fetch(`${relayUrl}/relay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const text = await res.text();
  let answer: Record<string, unknown> = {};
  try {
    answer = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // reported as text
  }
  return { ok: res.status === 202, status: res.status, answer, text };
}

function why(p: Probe): string {
  const what = p.status === 404 || p.status === 501 ? 'the route is not there yet' : 'a valid envelope was not delivered';
  const detail = p.answer.cache_result === undefined ? '' : `, cache_result ${String(p.answer.cache_result)}`;
  return `POST /relay answered ${p.status} ${String(p.answer.code ?? p.text.slice(0, 120))}${detail} (${what})`;
}

async function cacheCopies(ctx: BenchContext): Promise<number> {
  const r = ctx.recipients.relay;
  const cacheUrl = ctx.service.urls.cache;
  const sum = await fetch(`${cacheUrl}/cache/summary/${enc(r.did)}`, { headers: proofHeaders(ctx.profile, r, cacheUrl, 'summary', '*') });
  return sum.status === 200 ? ((await sum.json()) as { count: number }).count : -1;
}

function relayJob(ctx: BenchContext, name: string, relayUrl: string): LoadJob {
  const { settings: s } = ctx;
  return {
    name,
    url: relayUrl,
    connections: s.connections,
    durationS: s.durationS,
    warmupS: s.warmupS,
    request: { kind: 'envelope', path: '/relay', to: ctx.recipients.relay.did, bodyBytes: s.envelopeBytes },
  };
}

async function measure(ctx: BenchContext, name: string, relayUrl: string, pids: number[], p: Probe): Promise<Pick<Figure, 'value' | 'extra' | 'load' | 'details'>> {
  const before = await cacheCopies(ctx);
  const load = await ctx.load(relayJob(ctx, name, relayUrl), pids);
  const after = await cacheCopies(ctx);
  return {
    value: load.ok === 0 ? null : load.rate,
    extra: { p50_ms: load.latency_ms.p50, p99_ms: load.latency_ms.p99 },
    load,
    details: {
      probe_answer: { code: p.answer.code, delivery_mode: p.answer.delivery_mode, retry_count: p.answer.retry_count, cache_result: p.answer.cache_result },
      // every 202 left a copy in the Cache (warm-up included, so at least the measured 202s)
      cache_copies_added: after - before,
    },
  };
}

/** Splits a probe failure from a started-but-not-ready Relay: retries while the Relay's node identity registers. */
async function probeUntilReady(relayUrl: string, to: string, bytes: number, timeoutMs: number): Promise<Probe> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const p = await probe(relayUrl, to, bytes);
    if (p.ok || p.status === 404 || p.status === 501 || Date.now() > until) return p;
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function relayFigures(ctx: BenchContext, startSplitRelay: () => Promise<ServiceProcess>): Promise<Figure[]> {
  const s = ctx.settings;
  const to = ctx.recipients.relay.did;
  const out: Figure[] = [];

  // two HTTP hops: a Relay process of its own
  const split: Figure = {
    id: 'relay_to_cache',
    title: 'Relay → Cache: base-DID delivery, two HTTP hops (Relay process → node-signed POST /cache/store)',
    value: null,
    unit: 'req/s',
    reference: 'hello_world_rps',
    target: { op: '>=', ratio: 0.12 },
  };
  let relay: ServiceProcess | undefined;
  try {
    relay = await startSplitRelay();
  } catch (err) {
    split.unavailable = `a Relay-only process could not start (--roles relay --directory-url): ${(err as Error).message.slice(0, 200)}`;
  }
  if (relay !== undefined) {
    try {
      // the split Relay registers its node DID at the Directory in the background; until then the Cache refuses it
      const p = await probeUntilReady(relay.urls.relay, to, s.envelopeBytes, 20_000);
      if (!p.ok) split.unavailable = why(p);
      else {
        await ctx.settle('relay_split');
        Object.assign(split, await measure(ctx, 'relay-to-cache-2-hops', relay.urls.relay, [relay.pid, ctx.service.pid], p));
        const [relayCpu, nodeCpu] = split.load?.target_cpu?.processes ?? [];
        const perRequest = (cpuMs: number | undefined) =>
          cpuMs === undefined || !split.load?.ok ? undefined : Math.round((cpuMs * 1000) / split.load.ok);
        split.details = {
          ...split.details,
          processes: 'Relay process + combined node (Directory, Cache), CPU summed',
          relay_process: { ...relayCpu, cpu_per_request_us: perRequest(relayCpu?.cpu_ms) },
          cache_node: { ...nodeCpu, cpu_per_request_us: perRequest(nodeCpu?.cpu_ms) },
        };
      }
    } finally {
      await relay.stop();
    }
  }
  if (split.value !== null) {
    await ctx.settle('relay_floor');
    split.floor = await measureFloor(ctx, 'relay', relayJob(ctx, 'relay-to-cache-2-hops', ''));
  }
  out.push(split);

  // one HTTP hop: the combined node's Relay stores into its own Cache in-process
  const local: Figure = {
    id: 'relay_in_process',
    title: 'Relay → Cache in one process: base-DID delivery on the combined node (in-process store, one HTTP hop)',
    value: null,
    unit: 'req/s',
    reference: 'hello_world_rps',
  };
  const p = await probe(ctx.service.urls.relay, to, s.envelopeBytes);
  if (!p.ok) local.unavailable = why(p);
  else {
    await ctx.settle('relay_in_process');
    Object.assign(local, await measure(ctx, 'relay-in-process', ctx.service.urls.relay, [ctx.service.pid], p));
  }
  out.push(local);
  return out;
}
