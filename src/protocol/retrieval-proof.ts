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

/** Orders strings by Unicode code point (not UTF-16 code unit: they differ above U+FFFF). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a.charCodeAt(i) !== b.charCodeAt(i)) return a.codePointAt(i)! < b.codePointAt(i)! ? -1 : 1;
  }
  return a.length - b.length;
}

/** Ack subject (§11.4): ids deduplicated, sorted ascending by code point, joined by `,`. */
export function ackSubject(messageIds: readonly string[]): string {
  return [...new Set(messageIds)].sort(compareCodePoints).join(',');
}

/** One trailing `/` removed (endpoint comparison, §11.4 step 6). */
export function normalizeEndpoint(url: string): string {
  return url.endsWith('/') ? url.slice(0, -1) : url;
}
