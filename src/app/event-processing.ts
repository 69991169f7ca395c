/**
 * Wires event processing (http-api.md §10.9) into a node running the Cache or the Relay role: the dispatcher
 * takes the Cache's `CacheStored` events and the Relay's `RelayAccepted` / `RelayDelivered` events, reads policies from this node's ledger or the remote Directory, records its
 * runs in `<data-dir>/events.sqlite` (forgetting those of expired envelopes: events/claim-sweep.ts), and sends
 * through its own outbound HTTP (address guard as configured).
 * Part of the composition root.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../base/clock.js';
import { EventDispatcher } from '../events/dispatcher.js';
import type { OwnerBudget } from '../events/limits.js';
import { HttpPolicySource } from '../adapters/http-policy-source.js';
import { CachedPolicySource, LedgerPolicySource } from '../events/policy-source.js';
import { SqliteEventRunStore } from '../store/sqlite/event-run-store.js';
import { sweepClaims } from '../events/claim-sweep.js';
import type { Ledger } from '../ledger/chain.js';
import type { DirectoryPort } from '../ports/directory-port.js';
import type { NodeIdentity } from '../protocol/node-signature.js';
import type { Profile } from '../protocol/profile.js';
import { OutboundHttp } from '../outbound/outbound-http.js';
import type { RelayEvent } from '../relay/service.js';
import type { CacheRole } from './cache-role.js';
import type { Config } from './config.js';
import type { DirectoryAccess } from './directory-access.js';
import { openOwnerBudget } from './event-budget.js';
import { runs, type NodeContext } from './node-context.js';
import type { NodeUrls } from './public-urls.js';

export const EVENTS_DB_FILE = 'events.sqlite';

export interface EventProcessingOptions {
  config: Config;
  profile: Profile;
  clock: Clock;
  identity: NodeIdentity;
  directory: DirectoryPort;
  ledger: Ledger;
  /** The Directory's base URLs when it runs in other processes (tried in turn), else null. */
  remoteDirectory: readonly string[] | null;
  /** The Cache role, whose `CacheStored` events are processed, when the node runs it. */
  cache?: CacheRole;
  /** This node's public Relay URLs when it runs the Relay role. */
  ownRelayUrls(): readonly string[];
  logger?: Logger;
  outbound?: { extraCa?: string[]; hosts?: Record<string, string> };
  /** The per-owner budget when it is counted elsewhere (shared on PostgreSQL); default: in memory, as configured. */
  budget?: OwnerBudget;
}

export interface EventProcessing {
  readonly dispatcher: EventDispatcher;
  /** Hands over a Relay event (ignored once closing). */
  relayEvent(e: RelayEvent): void;
  /** Unsubscribes, lets the rule runs in progress finish (drops the rest), closes the run store and outbound connections. */
  close(): Promise<void>;
}

export function startEventProcessing(o: EventProcessingOptions): EventProcessing {
  const logger = o.logger?.child({ role: 'events' });
  const runs = SqliteEventRunStore.open(join(o.config.dataDir, EVENTS_DB_FILE));
  const outbound = new OutboundHttp({
    allowPrivate: o.config.policy.allowPrivateEndpoints,
    ...(o.outbound?.extraCa === undefined ? {} : { extraCa: o.outbound.extraCa }),
    ...(o.outbound?.hosts === undefined ? {} : { hosts: o.outbound.hosts }),
  });
  // a remote Directory's policies reused as its other answers are (--directory-view-ttl-ms)
  const remotePolicies = o.remoteDirectory === null ? null : new HttpPolicySource(o.remoteDirectory, undefined, logger);
  const ttlMs = o.config.directoryViewTtlMs;
  const dispatcher = new EventDispatcher({
    profile: o.profile,
    clock: o.clock,
    identity: o.identity,
    directory: o.directory,
    policies: remotePolicies === null ? new LedgerPolicySource(o.ledger) : ttlMs > 0 ? new CachedPolicySource(remotePolicies, o.clock, ttlMs) : remotePolicies,
    runs,
    outbound,
    relayUrls: () => (o.config.events.relayUrls.length > 0 ? o.config.events.relayUrls : o.ownRelayUrls()),
    relayEndpoint: () => o.ownRelayUrls()[0] ?? null,
    budgetPerOwnerPerMinute: o.config.events.budgetPerOwnerPerMinute,
    ...(o.budget === undefined ? {} : { budget: o.budget }),
    ...(logger === undefined ? {} : { logger }),
  });
  const claims = sweepClaims(runs, o.clock, logger === undefined ? {} : { logger });
  const off = o.cache?.events.on('CacheStored', (e) => dispatcher.onEvent(e));
  let closing = false;
  return {
    dispatcher,
    relayEvent(e) {
      if (!closing) dispatcher.onEvent(e);
    },
    async close() {
      closing = true;
      off?.();
      await dispatcher.stop();
      await claims.stop();
      outbound.close();
      remotePolicies?.close();
      await runs.close();
    },
  };
}

/**
 * Event processing of a node running the Cache or the Relay role, as a component (stopped after the Relay, whose
 * events it takes, and before the Cache, whose events it subscribes to), its counters in the node's metrics; its
 * per-owner budget shared by the processes of a PostgreSQL deployment (event-budget.ts).
 */
export async function openEventProcessing(
  ctx: NodeContext,
  deps: { identity: NodeIdentity; access: DirectoryAccess; ledger: Ledger; cache: CacheRole | undefined; urls: NodeUrls },
): Promise<EventProcessing | undefined> {
  const relay = runs(ctx, 'relay');
  if (deps.cache === undefined && !relay) return undefined;
  const { overrides, metrics } = ctx;
  const owners = await openOwnerBudget(ctx.config.events.budgetPerOwnerPerMinute, ctx.config.db, ctx.clock, ctx.logger);
  ctx.lifecycle.add({ name: 'event budget', stop: () => owners.close() });
  const events = startEventProcessing({
    budget: owners.budget,
    config: ctx.config,
    profile: ctx.profile,
    clock: ctx.clock,
    identity: deps.identity,
    directory: deps.access.directory,
    ledger: deps.ledger,
    remoteDirectory: deps.access.remote,
    ...(deps.cache === undefined ? {} : { cache: deps.cache }),
    ownRelayUrls: () => (relay ? deps.urls.relay() : []),
    logger: ctx.logger,
    ...(overrides.eventOutbound === undefined ? {} : { outbound: overrides.eventOutbound }),
  });
  ctx.lifecycle.add({ name: 'events', stop: () => events.close() });
  const { dispatcher } = events;
  metrics.countedBy('ddn_event_drops_total', 'Events and event steps dropped, by reason', 'reason', () => ({ ...dispatcher.drops() }));
  metrics.gauge(
    'ddn_events',
    'Events in progress (active) and waiting for a turn (waiting); past 10,000 in all, new events are dropped',
    (g) => {
      const { active, waiting } = dispatcher.load();
      g.set({ state: 'active' }, active);
      g.set({ state: 'waiting' }, waiting);
    },
    ['state'],
  );
  metrics.countedBy('ddn_event_rule_runs_total', 'Event rules run, by outcome: ok (the plan succeeded) or failed', 'outcome', () => dispatcher.runs());
  return events;
}
