/**
 * The public envelope fields an event template may point at (`/envelope/…`, http-api.md §10.9), shared by the
 * Cache's and the Relay's events; never the payload or headers.
 */
import type { Envelope } from './envelope.js';

export interface EventEnvelopeContext {
  message_id: string;
  to: string;
  recipient_did: string;
  tag: string | null;
  application_id: string | null;
  timestamp: string;
  ttl: string | null;
  delivery_hint: string | null;
  message_group_id: string | null;
  sequence_number: number | null;
  total_chunks: number | null;
  sender: string | null;
}

/** The `/envelope/…` context of `env` delivered to `recipientDid`. */
export function eventEnvelopeContext(env: Envelope, recipientDid: string): EventEnvelopeContext {
  const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  return {
    message_id: env.messageId,
    to: env.to,
    recipient_did: recipientDid,
    tag: env.tag,
    application_id: env.applicationId,
    timestamp: env.timestampText,
    ttl: text(env.fields.ttl),
    delivery_hint: text(env.fields.delivery_hint),
    message_group_id: env.chunk?.groupId ?? null,
    sequence_number: env.chunk?.sequence ?? null,
    total_chunks: env.chunk?.total ?? null,
    sender: env.sender?.did ?? null,
  };
}
