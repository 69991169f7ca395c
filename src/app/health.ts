/** `GET /health` on every role (http-api.md §3.7). */
import { to0x } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import type { Ledger } from '../ledger/chain.js';
import type { BlockRef } from '../ledger/types.js';
import type { EventDropCounters } from '../events/limits.js';
import { json, type HttpServer } from '../http/server.js';
import { asIs, defineRoute } from '../http/route.js';
import type { Role } from './config.js';
import type { DirectoryState } from './readiness.js';
import type { BuildInfo } from './version.js';
import type { ChainOrdering } from '../chain/substrate-ordering.js';
import { HealthSchema, type HealthResponse } from '../wire/meta.js';

/** What `/health` reports on. */
export interface HealthSource {
  readonly roles: readonly Role[];
  readonly profile: string;
  readonly chainId: string;
  readonly ledger: Pick<Ledger, 'genesisHash' | 'headRef' | 'finalizedRefNow'>;
  /** False while the node is starting or shutting down. */
  isReady(): boolean;
  /** True while the node refuses new data for lack of storage (`status: "degraded"`); default never. */
  isDegraded?(): boolean;
  /** This build (`version`, `commit`). */
  readonly build?: BuildInfo;
  /**
   * The Directory a Relay- or Cache-only process asks: `/health` then reports it and the chain it serves, not
   * this process's own (empty) ledger.
   */
  readonly directory?: { state(): Promise<DirectoryState> };
  /** What event processing dropped, when this node runs it (src/events/limits.ts). */
  eventDrops?(): EventDropCounters | null;
  /** The chain a Directory on `--ledger substrate` follows. */
  readonly chain?: Pick<ChainOrdering, 'status'>;
}

/** The 200 body of §3.7. */
export interface HealthBody {
  /** `ok`, or `degraded` while reads work but new data is refused (507) for lack of storage. */
  status: 'ok' | 'degraded';
  version?: string;
  commit?: string;
  roles: Role[];
  profile: string;
  chain_id: string;
  /** The chain's; from the remote Directory in a Relay- or Cache-only process (absent while it does not answer). */
  genesis_hash?: string;
  head?: { number: number; hash: string };
  finalized?: { number: number; hash: string };
  /** A Relay- or Cache-only process: the Directory it depends on and whether it answers. */
  directory?: { url: string; reachable: boolean };
  /** Present on a node running the Relay or the Cache: events and steps dropped since start, by kind. */
  events?: { dropped: EventDropCounters };
  /** A Directory on `--ledger substrate`: the chain it follows. */
  chain?: HealthResponse['chain'];
}

const refBody = (b: Pick<BlockRef, 'number' | 'hash'>): { number: number; hash: string } => ({ number: b.number, hash: b.hash });

/** The §3.7 body; throws `ledger_unavailable` when the node is not ready or the ledger cannot be read. */
export function healthBody(src: HealthSource): HealthBody {
  if (!src.isReady()) throw new DdnError('ledger_unavailable', 'the ledger is not ready');
  let head: BlockRef;
  let finalized: BlockRef;
  try {
    head = src.ledger.headRef();
    finalized = src.ledger.finalizedRefNow();
  } catch {
    throw new DdnError('ledger_unavailable', 'the ledger cannot be read');
  }
  return {
    ...ownFields(src),
    genesis_hash: to0x(src.ledger.genesisHash),
    head: refBody(head),
    finalized: refBody(finalized),
    ...chainFields(src),
    ...eventFields(src),
  };
}

/** Where a Directory on a chain stands on it. */
function chainFields(src: HealthSource): Pick<HealthBody, 'chain'> {
  if (src.chain === undefined) return {};
  const s = src.chain.status();
  return {
    chain: {
      network_id: src.chainId,
      connected: s.connected,
      account: s.info.account,
      finalized: s.chainFinalized,
      applied: s.applied.number,
      lag: Math.max(0, s.chainFinalized - s.applied.number),
      awaiting: s.awaiting,
    },
  };
}

/** What event processing dropped, when this node runs it. */
function eventFields(src: HealthSource): Pick<HealthBody, 'events'> {
  const drops = src.eventDrops?.() ?? null;
  return drops === null ? {} : { events: { dropped: drops } };
}

/** What the process itself reports: status, version, roles, profile, chain id. */
function ownFields(src: HealthSource): Pick<HealthBody, 'status' | 'version' | 'commit' | 'roles' | 'profile' | 'chain_id'> {
  const b = src.build;
  const version = b === undefined ? {} : b.commit === undefined ? { version: b.version } : { version: b.version, commit: b.commit };
  return { status: src.isDegraded?.() === true ? 'degraded' : 'ok', ...version, roles: [...src.roles], profile: src.profile, chain_id: src.chainId };
}

const isRef = (v: unknown): v is { number: number; hash: string } =>
  typeof v === 'object' && v !== null && typeof (v as { number?: unknown }).number === 'number' && typeof (v as { hash?: unknown }).hash === 'string';

/**
 * The §3.7 body of a Relay- or Cache-only process: the remote Directory's chain (genesis, head, finalized) and
 * whether it answers; never this process's own ledger, which holds no chain.
 */
export async function remoteHealthBody(src: HealthSource, directory: { state(): Promise<DirectoryState> }): Promise<HealthBody> {
  if (!src.isReady()) throw new DdnError('ledger_unavailable', 'the node is not ready');
  const d = await directory.state();
  const h = d.health ?? {};
  return {
    ...ownFields(src),
    ...(typeof h.genesis_hash === 'string' ? { genesis_hash: h.genesis_hash } : {}),
    ...(isRef(h.head) ? { head: refBody(h.head) } : {}),
    ...(isRef(h.finalized) ? { finalized: refBody(h.finalized) } : {}),
    directory: { url: d.url, reachable: d.reachable },
    ...eventFields(src),
  };
}

/** Adds `GET /health` to `server`: a route object, its answer typed by `HealthSchema`. */
export function registerHealthRoute(server: HttpServer, src: HealthSource): void {
  const directory = src.directory;
  server.add([
    defineRoute({
      method: 'GET',
      url: '/health',
      summary: 'Health (http-api.md §3.7)',
      tags: ['meta'],
      answers: { 200: HealthSchema },
      // §3.7: 503 `ledger_unavailable` when the node is not ready or its ledger cannot be read
      errors: ['ledger_unavailable'],
      parse: asIs,
      handle: async () => json(200, directory === undefined ? healthBody(src) : await remoteHealthBody(src, directory)),
    }),
  ]);
}
