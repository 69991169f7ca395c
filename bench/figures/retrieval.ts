/**
 * Signed retrieval (http-api.md §11.4–§11.5): `GET /cache/summary/{did}` and `GET /cache/messages/{did}`, each
 * request with its own freshly signed proof (new nonce) — proof checks, a DID lookup, one Ed25519 verification
 * and a durable nonce claim per request, over a mailbox of `mailboxSize` 1 KiB envelopes.
 */
import { enc, type BenchContext, type Figure } from '../context.js';
import { measureFloor } from '../floors.js';
import type { BenchRecipient } from '../fixtures.js';
import type { LoadJob, LoadResult, ProofRequest } from '../jobs.js';
import { checkAllAccepted } from './cache-store.js';

/** The signed `operation` request (a fresh proof each) of recipient `r` against the Cache at `cacheUrl`. */
export function retrievalRequest(cacheUrl: string, r: BenchRecipient, profile: string, operation: 'summary' | 'pull'): ProofRequest {
  const path = operation === 'summary' ? `/cache/summary/${enc(r.did)}` : `/cache/messages/${enc(r.did)}`;
  return { kind: 'proof', path, operation, profile, did: r.did, seedHex: r.seedHex, keyId: r.keyId, serviceId: r.serviceId, endpoint: cacheUrl };
}

function retrievalJob(ctx: BenchContext, operation: 'summary' | 'pull', name: string): LoadJob {
  const { settings: s, service } = ctx;
  return {
    name,
    url: service.urls.cache,
    connections: s.connections,
    durationS: s.durationS,
    warmupS: s.warmupS,
    request: retrievalRequest(service.urls.cache, ctx.recipients.retrieval, ctx.profile, operation),
  };
}

export async function retrievalLoad(ctx: BenchContext, operation: 'summary' | 'pull', name: string): Promise<LoadResult> {
  const load = await ctx.load(retrievalJob(ctx, operation, name), ctx.service.pid);
  checkAllAccepted(load, name);
  return load;
}

export async function retrievalFigures(ctx: BenchContext): Promise<Figure[]> {
  const figures: Figure[] = [];
  for (const op of ['summary', 'pull'] as const) {
    if (op === 'pull') await ctx.settle('retrieval_pull');
    const load = await retrievalLoad(ctx, op, `retrieval-${op}`);
    figures.push({
      id: `retrieval_${op}`,
      title: `Cache: signed retrieval, ${op === 'summary' ? 'summary' : 'pull'} (${ctx.settings.mailboxSize} × 1 KiB in the mailbox)`,
      value: load.rate,
      unit: 'req/s',
      reference: 'ed25519_verifies_per_s',
      target: { op: '>=', ratio: 0.6 },
      extra: { p50_ms: load.latency_ms.p50, p99_ms: load.latency_ms.p99 },
      load,
    });
  }
  // one floor for both: the proof check and the nonce claim are what neither can skip
  await ctx.settle('retrieval_floor');
  const floor = await measureFloor(ctx, 'retrieval', retrievalJob(ctx, 'summary', 'retrieval'));
  for (const f of figures) f.floor = floor;
  return figures;
}
