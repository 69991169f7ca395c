/**
 * The `CacheStored` event (http-api.md §10.9): emitted after the store committed, for new entries only (never
 * for a deduplicated store). Event processing (policy rules, Send/Call) subscribes here; it is best-effort
 * and can never change a Cache response.
 */
import type { Logger } from 'pino';
import { isoMs } from '../base/clock.js';
import type { TraceLogger } from '../base/request-trace.js';
import type { Envelope } from '../protocol/envelope.js';
import { eventEnvelopeContext } from '../protocol/event-envelope.js';
import type { CacheStoredEvent } from '../ports/node-events.js';
import type { CacheDestination } from './destination.js';
import type { EntryMeta } from './mailbox-store.js';

export type { CacheStoredEvent };

/** Every Cache event. */
export type CacheEvent = CacheStoredEvent;

/** A subscriber. Called synchronously after the commit; must not throw (errors are logged and dropped). */
export type CacheEventListener = (event: CacheEvent) => void;

/** What the Cache emits through. */
export interface CacheEventSink {
  /** `log`: the logger of the request the event comes from (a failing listener is logged there). */
  emit(event: CacheEvent, log?: TraceLogger): void;
}

/** Subscribe side of the hook. */
export interface CacheEvents {
  /** Adds a listener; returns its removal. */
  on(type: CacheEvent['type'], listener: CacheEventListener): () => void;
}

/** An in-process event hub: the Cache emits, event processing subscribes. */
export class CacheEventHub implements CacheEventSink, CacheEvents {
  private readonly listeners = new Set<CacheEventListener>();

  constructor(private readonly logger?: Logger) {}

  on(type: CacheEvent['type'], listener: CacheEventListener): () => void {
    void type;
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  emit(event: CacheEvent, log: TraceLogger | undefined = this.logger): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        log?.error({ err, event_type: event.type, message_id: event.message_id }, 'cache event listener failed');
      }
    }
  }
}

/** The `CacheStored` event of a new entry stored from `env` through `destination`. */
export function cacheStoredEvent(env: Envelope, persona: string | null, destination: CacheDestination, e: EntryMeta): CacheStoredEvent {
  return {
    type: 'CacheStored',
    message_id: e.messageId,
    recipient_did: e.recipientDid,
    persona,
    tag: e.tag,
    application_id: e.applicationId,
    occurred_at: isoMs(e.storedAtMs),
    chunked: e.chunk !== null,
    message_group_id: e.chunk?.groupId ?? null,
    expires_at: isoMs(e.expiresAtMs),
    service_id: destination.serviceId,
    endpoint: destination.endpoint,
    envelope: eventEnvelopeContext(env, e.recipientDid),
    requested_expiry_ms: env.requestedExpiryMs,
  };
}
