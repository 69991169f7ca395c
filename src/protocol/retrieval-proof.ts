/** Cache retrieval proof text (http-api.md §11.4): ten LF-joined lines, no trailing newline. */
import type { Profile } from './profile.js';

export type ProofOperation = 'pull' | 'summary' | 'chunks' | 'pull_message' | 'ack';

export interface ProofFields {
  operation: ProofOperation;
  did: string;
  deviceId: string;
  serviceId: string;
  cacheEndpoint: string;
  keyId: string;
  timestamp: string;
  nonce: string;
  subject: string;
}

export function retrievalProofText(profile: Profile, f: ProofFields): string {
  return [
    profile.retrievalProofHeader,
    `operation=${f.operation}`,
    `did=${f.did}`,
    `device_id=${f.deviceId}`,
    `service_id=${f.serviceId}`,
    `cache_endpoint=${f.cacheEndpoint}`,
    `key_id=${f.keyId}`,
    `timestamp=${f.timestamp}`,
    `nonce=${f.nonce}`,
    `subject=${f.subject}`,
  ].join('\n');
}

/** Ack subject: ids deduplicated, sorted ascending by code point, joined by `,`. */
export function ackSubject(messageIds: readonly string[]): string {
  return [...new Set(messageIds)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).join(',');
}

/** One trailing `/` removed (endpoint comparison, §11.4 step 6). */
export function normalizeEndpoint(url: string): string {
  return url.endsWith('/') ? url.slice(0, -1) : url;
}
