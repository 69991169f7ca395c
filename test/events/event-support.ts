/**
 * What the event dispatcher's tests share: an event, a Directory whose DIDs all have a key agreement, a real run
 * store, and a dispatcher reading policies from a real ledger.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateX25519KeyPair } from '../../src/crypto/x25519.js';
import type { DidView, DirectoryPort } from '../../src/ports/directory-port.js';
import type { DidDocument } from '../../src/protocol/document.js';
import type { EventEnvelopeContext } from '../../src/protocol/event-envelope.js';
import { multibaseX25519 } from '../../src/protocol/keys.js';
import type { RelayEvent } from '../../src/relay/service.js';
import { SqliteEventRunStore } from '../../src/store/sqlite/event-run-store.js';
import { ManualClock } from '../../src/base/clock.js';
import { EventDispatcher, type DispatcherLimits, type EventDispatcherDeps } from '../../src/events/dispatcher.js';
import type { OwnerBudget } from '../../src/events/limits.js';
import { LedgerPolicySource } from '../../src/events/policy-source.js';
import type { CallHandler } from '../../src/ledger/runtime/dispatch.js';
import { putPolicyV3 } from '../../src/ledger/runtime/policy-state.js';
import type { DeliveryPolicyV3 } from '../../src/protocol/policy/types.js';
import type { Profile } from '../../src/protocol/profile.js';
import { OutboundHttp } from '../../src/outbound/outbound-http.js';
import { genesisConfig, Harness } from '../ledger/harness.js';
import type { Actor } from '../ledger/policy-harness.js';

/** A `RelayAccepted` event of message `m-<n>` for `recipient`. */
export const relayAccepted = (recipient: string, n: number): RelayEvent => ({
  type: 'RelayAccepted',
  message_id: `m-${n}`,
  recipient_did: recipient,
  persona: null,
  tag: null,
  application_id: null,
  chunked: false,
  message_group_id: null,
  occurred_at: '2026-11-24T10:00:00Z',
  envelope: {} as EventEnvelopeContext,
  requested_expiry_ms: Date.parse('2026-11-25T10:00:00Z'),
});

/** Every DID has an X25519 key agreement, so a Send builds its control envelope. */
export function directoryWithKeys(): DirectoryPort {
  const ka = generateX25519KeyPair();
  const getDid = async (did: string): Promise<DidView> => {
    const document: DidDocument = {
      id: did,
      verificationMethod: [],
      authentication: [],
      keyAgreement: [{ id: `${did}#ka`, type: 'X25519KeyAgreementKey2020', controller: did, publicKeyMultibase: multibaseX25519(ka.publicKey) }],
      service: [],
    };
    return { did, deactivated: false, document, rootPubkey: new Uint8Array(32) };
  };
  return { getDid, lookupAlias: async () => null, resolveDelivery: async () => null };
}

/** A run store in a file of its own (`events.sqlite` in a temporary directory), removed by `close`. */
export function tempRuns(): { runs: SqliteEventRunStore; path: string; close: () => Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-event-runs-'));
  const path = join(dir, 'events.sqlite');
  const runs = SqliteEventRunStore.open(path);
  return {
    runs,
    path,
    close: async () => {
      await runs.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What {@link ledgerDispatcher} builds a dispatcher of. */
export interface LedgerDispatcherOptions {
  profile: Profile;
  /** Registered on the ledger; the first is the node's identity and the seed's control DID. */
  actors: readonly Actor[];
  /** Put straight into state (no write check), as an older chain would hold them. */
  policies: readonly DeliveryPolicyV3[];
  /** Where Send steps post their control envelopes. */
  relayUrl: string;
  budget?: number;
  /** The per-owner budget counted elsewhere (shared through PostgreSQL); replaces `budget`. */
  ownerBudget?: OwnerBudget;
  limits?: Partial<DispatcherLimits>;
}

/** A ledger holding `policies` and a dispatcher reading it, with a real run store; `close` waits for it first. */
export function ledgerDispatcher(o: LedgerDispatcherOptions): { d: EventDispatcher; clock: ManualClock; runsPath: string; close: () => Promise<void> } {
  const { profile } = o;
  const first = o.actors[0]!;
  const seed: CallHandler = (s) => {
    for (const p of o.policies) putPolicyV3(s, p);
  };
  const h = new Harness({ profile, genesis: genesisConfig({ profile: profile.p }), handlers: { register_application: seed } });
  for (const a of o.actors) h.register(a.did, a.key, { profile });
  h.apply({ name: 'register_application', args: { applicationId: 'seed', controlDid: first.did, signerKeyId: 'root', signature: new Uint8Array(64) } });
  const clock = new ManualClock(0);
  const outbound = new OutboundHttp({ allowPrivate: true });
  const runs = tempRuns();
  const deps: EventDispatcherDeps = {
    profile,
    clock,
    identity: { did: first.did, serviceId: `${first.did}#relay`, sign: () => new Uint8Array(64) } as never,
    directory: directoryWithKeys(),
    policies: new LedgerPolicySource(h.ledger),
    runs: runs.runs,
    outbound,
    relayUrls: () => [o.relayUrl],
    relayEndpoint: () => null,
    ...(o.budget === undefined ? {} : { budgetPerOwnerPerMinute: o.budget }),
    ...(o.ownerBudget === undefined ? {} : { budget: o.ownerBudget }),
  };
  const d = new EventDispatcher(deps, o.limits);
  return {
    d,
    clock,
    runsPath: runs.path,
    close: async () => {
      await d.idle();
      outbound.close();
      h.close();
      await runs.close();
    },
  };
}
