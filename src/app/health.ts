/** `GET /health` on every role (http-api.md §3.7). */
import { to0x } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import type { BlockRef, Ledger } from '../ledger/chain.js';
import type { EventDropCounters } from '../events/limits.js';
import { json, type HttpServer } from '../http/server.js';
import type { Role } from './config.js';

/** What `/health` reports on. */
export interface HealthSource {
  readonly roles: readonly Role[];
  readonly profile: string;
  readonly chainId: string;
  readonly ledger: Pick<Ledger, 'genesisHash' | 'headRef' | 'finalizedRefNow'>;
  /** False while the node is starting or shutting down. */
  isReady(): boolean;
  /** What event processing dropped, when this node runs it (src/events/limits.ts). */
  eventDrops?(): EventDropCounters | null;
}

/** The 200 body of §3.7. */
export interface HealthBody {
  status: 'ok';
  roles: Role[];
  profile: string;
  chain_id: string;
  genesis_hash: string;
  head: { number: number; hash: string };
  finalized: { number: number; hash: string };
  /** Present on a node running the Relay or the Cache: events and steps dropped since start, by kind. */
  events?: { dropped: EventDropCounters };
}

const refBody = (b: BlockRef): { number: number; hash: string } => ({ number: b.number, hash: b.hash });

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
  const drops = src.eventDrops?.() ?? null;
  return {
    status: 'ok',
    roles: [...src.roles],
    profile: src.profile,
    chain_id: src.chainId,
    genesis_hash: to0x(src.ledger.genesisHash),
    head: refBody(head),
    finalized: refBody(finalized),
    ...(drops === null ? {} : { events: { dropped: drops } }),
  };
}

/** Adds `GET /health` to `server`. */
export function registerHealthRoute(server: HttpServer, src: HealthSource): void {
  server.route('GET', '/health', () => json(200, healthBody(src)));
}
