/**
 * The Cache retrieval SDK (http-api.md §11.4–§11.6): every request carries a fresh retrieval proof signed with the
 * recipient's Ed25519 key — seconds-precision ISO timestamp with `Z` and a lowercase UUID v4 nonce, as deployed
 * clients send them. The key never leaves the caller; only signatures do.
 */
import { isoSeconds } from '../base/clock.js';
import { randomUUID } from 'node:crypto';
import { toBase64, utf8 } from '../base/bytes.js';
import type { Ed25519KeyPair } from '../crypto/ed25519.js';
import { ackSubject, retrievalProofText, type ProofOperation } from '../protocol/retrieval-proof.js';
import type { Profile } from '../protocol/profile.js';
import { encodePath, globalFetch, requestJson, type FetchLike, type HttpMethod } from './http.js';
import type { CacheAckResponse, CacheChunksResponse, CacheMessageResponse, CacheMessagesResponse, CacheSummaryResponse } from './transfer-types.js';

/** One Cache endpoint of a recipient and the proof identity used there. */
export interface CacheTarget {
  did: string;
  /** The `<P>CacheService` id. */
  serviceId: string;
  /** The endpoint as published, without a trailing `/`. */
  endpoint: string;
  /** The authorized Ed25519 verification method. */
  keyId: string;
  /** Bound into the proof; `''` when none. */
  deviceId: string;
}

/** Options of {@link CacheClient}. */
export interface CacheClientOptions {
  fetch?: FetchLike;
  /** Clock for proof timestamps; default `Date.now`. */
  now?: () => number;
  /** Nonce source; default a random UUID v4. */
  nonce?: () => string;
}

/** Most message ids per acknowledgement (§11.6). */
export const MAX_ACK_IDS = 1000;

export { isoSeconds };

/** A client of one Cache endpoint for one recipient. */
export class CacheClient {
  readonly target: CacheTarget;
  private readonly profile: Profile;
  private readonly signer: Ed25519KeyPair;
  private readonly fetchImpl: FetchLike;
  private readonly now: () => number;
  private readonly nonce: () => string;

  constructor(profile: Profile, target: CacheTarget, signer: Ed25519KeyPair, opts: CacheClientOptions = {}) {
    this.profile = profile;
    this.target = target;
    this.signer = signer;
    this.fetchImpl = opts.fetch ?? globalFetch;
    this.now = opts.now ?? Date.now;
    this.nonce = opts.nonce ?? randomUUID;
  }

  /** The proof fields of one request (§11.4): values and Base64 signature. */
  proof(operation: ProofOperation, subject: string): { timestamp: string; nonce: string; signature: string } {
    const t = this.target;
    const timestamp = isoSeconds(this.now());
    const nonce = this.nonce();
    const text = retrievalProofText(this.profile, {
      operation,
      did: t.did,
      deviceId: t.deviceId,
      serviceId: t.serviceId,
      cacheEndpoint: t.endpoint,
      keyId: t.keyId,
      timestamp,
      nonce,
      subject,
    });
    return { timestamp, nonce, signature: toBase64(this.signer.sign(utf8(text))) };
  }

  private headers(operation: ProofOperation, subject: string): Record<string, string> {
    const t = this.target;
    const p = this.proof(operation, subject);
    const h: Record<string, string> = {
      'X-Recipient-DID': t.did,
      'X-Service-Id': t.serviceId,
      'X-Cache-Endpoint': t.endpoint,
      'X-Key-Id': t.keyId,
      'X-Timestamp': p.timestamp,
      'X-Nonce': p.nonce,
      'X-Signature': p.signature,
    };
    if (t.deviceId !== '') h['X-Device-Id'] = t.deviceId;
    return h;
  }

  private async call<T>(method: HttpMethod, path: string, operation: ProofOperation, subject: string, body?: unknown): Promise<T> {
    return (await requestJson<T>(this.target.endpoint, method, path, body, this.fetchImpl, this.headers(operation, subject))).body;
  }

  /** `GET /cache/summary/{did}[/{device}]` (operation `summary`). */
  summary(): Promise<CacheSummaryResponse> {
    const t = this.target;
    const path = t.deviceId === '' ? encodePath`/cache/summary/${t.did}` : encodePath`/cache/summary/${t.did}/${t.deviceId}`;
    return this.call('GET', path, 'summary', '*');
  }

  /** `GET /cache/messages/{did}` (operation `pull`). */
  messages(): Promise<CacheMessagesResponse> {
    return this.call('GET', encodePath`/cache/messages/${this.target.did}`, 'pull', '*');
  }

  /** `GET /cache/chunks/{did}/{group}` (operation `chunks`). */
  chunks(groupId: string): Promise<CacheChunksResponse> {
    return this.call('GET', encodePath`/cache/chunks/${this.target.did}/${groupId}`, 'chunks', groupId);
  }

  /** `GET /cache/message/{did}/{id}` (operation `pull_message`). */
  message(messageId: string): Promise<CacheMessageResponse> {
    return this.call('GET', encodePath`/cache/message/${this.target.did}/${messageId}`, 'pull_message', messageId);
  }

  /**
   * `POST /cache/ack` (operation `ack`) in batches of {@link MAX_ACK_IDS}, the proof both in the body (with
   * `signature_b64`) and in the headers. Resolves with the ids this Cache actually deleted.
   */
  async ack(messageIds: readonly string[]): Promise<string[]> {
    const ids = [...new Set(messageIds)];
    const deleted: string[] = [];
    for (let i = 0; i < ids.length; i += MAX_ACK_IDS) {
      const batch = ids.slice(i, i + MAX_ACK_IDS);
      const subject = ackSubject(batch);
      const headers = this.headers('ack', subject);
      const t = this.target;
      const body = {
        did: t.did,
        device_id: t.deviceId,
        service_id: t.serviceId,
        cache_endpoint: t.endpoint,
        key_id: t.keyId,
        timestamp: headers['X-Timestamp'],
        nonce: headers['X-Nonce'],
        signature_b64: headers['X-Signature'],
        message_ids: batch,
      };
      const r = await requestJson<CacheAckResponse>(t.endpoint, 'POST', '/cache/ack', body, this.fetchImpl, headers);
      deleted.push(...r.body.message_ids);
    }
    return deleted;
  }
}
