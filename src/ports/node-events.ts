/**
 * The §10.9 events the roles emit (http-api.md §10.9) and event processing (src/events) consumes. Declared here so
 * that neither side imports the other: a Relay or a Cache emits them, the dispatcher subscribes through the app.
 */
import type { EventEnvelopeContext } from '../protocol/event-envelope.js';

/** §10.9 events the Relay emits (delivery is never changed by them). */
export interface RelayEvent extends EventClaimExpiry {
  type: 'RelayAccepted' | 'RelayDelivered';
  message_id: string;
  recipient_did: string;
  persona: string | null;
  tag: string | null;
  application_id: string | null;
  chunked: boolean;
  message_group_id: string | null;
  occurred_at: string;
  /** The envelope's public fields for `/envelope/…` template pointers. */
  envelope: EventEnvelopeContext;
}

/** A Cache stored a new, non-deduplicated entry. */
export interface CacheStoredEvent extends EventClaimExpiry {
  type: 'CacheStored';
  message_id: string;
  recipient_did: string;
  /** Canonical persona when the envelope was addressed `…@persona`. */
  persona: string | null;
  tag: string | null;
  application_id: string | null;
  /** ISO time of the store. */
  occurred_at: string;
  chunked: boolean;
  message_group_id: string | null;
  /** ISO expiry of the stored copy. */
  expires_at: string;
  /** The recipient's (or the Store step target's) service through which the store reached this Cache. */
  service_id?: string;
  /** This Cache's endpoint as that service publishes it. */
  endpoint: string;
  /** The envelope's public fields for `/envelope/…` template pointers. */
  envelope: EventEnvelopeContext;
}

/** What an event carries besides its §10.9 fields: not part of the `/event/…` template context. */
export interface EventClaimExpiry {
  /**
   * The envelope's requested expiry (`timestamp` + `ttl`, 24 h when absent), ms: from then on every Relay and Cache
   * refuses it (`envelope_expired`), so the same event cannot happen again and its run's claim may be forgotten.
   */
  requested_expiry_ms: number;
}

/** Every event a node's roles emit. */
export type NodeEvent = CacheStoredEvent | RelayEvent;
