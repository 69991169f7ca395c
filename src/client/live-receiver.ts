/**
 * Live delivery over the Relay's WebSocket (http-api.md §10.8): `GET /ws/{did}/{device}` on the Relay base URL,
 * a welcome frame `{"type":"welcome","status":"ok","connectionKey":"<did>::<device>"}`, then bare envelopes as text
 * frames. The session reconnects after a drop until stopped; a live copy is a notification, the Cache keeps the
 * durable one (§10.7). With {@link LiveReceiverOptions.proof} every connection carries a fresh live-session proof
 * (src/protocol/live-proof.ts) in its headers, as Relays with `--relay-live-auth required` demand.
 */
import { isJsonObject, memberOf } from '../base/guards.js';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { Ed25519KeyPair } from '../crypto/ed25519.js';
import { liveProofHeaders, signLiveProof } from '../protocol/live-proof.js';
import type { Profile } from '../protocol/profile.js';
import { normalizeEndpoint } from '../protocol/retrieval-proof.js';
import { authorizedKeyIdFor } from './cache-targets.js';
import { encodePath } from './http.js';
import type { RenderedDidDocumentJson } from './types.js';

/** Who signs the live-session proofs: a service of the DID whose `authorization` lists the key, and the key. */
export interface LiveProofIdentity {
  profile: Profile;
  /** A `<P>RelayService` or `<P>CacheService` of the DID. */
  serviceId: string;
  keyId: string;
  signer: Pick<Ed25519KeyPair, 'sign'>;
  /** Clock of the proof timestamps; default `Date.now`. */
  nowMs?: () => number;
}

/**
 * The service and key id to sign live-session proofs with `publicKey`: the first `<P>RelayService`, else the first
 * `<P>CacheService`, of `document` whose `authorization` lists a usable verification method of that key.
 */
export function liveProofServiceFor(
  profile: Profile,
  document: RenderedDidDocumentJson,
  publicKey: Uint8Array,
  keyId?: string,
): { serviceId: string; keyId: string } | undefined {
  for (const type of [profile.relayServiceType, profile.cacheServiceType]) {
    for (const s of document.service ?? []) {
      if (s.type !== type) continue;
      const id = authorizedKeyIdFor(document, s, publicKey, keyId);
      if (id !== undefined) return { serviceId: s.id, keyId: id };
    }
  }
  return undefined;
}

/** Options of {@link LiveReceiver}. */
export interface LiveReceiverOptions {
  relayUrl: string;
  did: string;
  device: string;
  /** Called for every envelope frame, in order. */
  onEnvelope(envelope: Record<string, unknown>): void;
  /** Human-readable state changes (connected, dropped, reconnecting). */
  onStatus?(line: string): void;
  /** Pause before reconnecting; default 1000 ms, doubling to 30 s. */
  reconnectMs?: number;
  /** Signs a proof for every connection (the Relay's base URL is the signed endpoint). */
  proof?: LiveProofIdentity;
}

/** ISO-8601, seconds precision, `Z` (as proof timestamps are sent). */
function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** The WebSocket URL of a Relay base URL (`http` → `ws`, `https` → `wss`). */
export function liveUrl(relayUrl: string, did: string, device: string): string {
  const base = relayUrl.replace(/^http/, 'ws').replace(/\/+$/, '');
  return base + encodePath`/ws/${did}/${device}`;
}

/** One live session, reconnecting until {@link LiveReceiver.stop}. */
export class LiveReceiver {
  private socket: WebSocket | undefined;
  private stopped = false;
  private delayMs: number;
  private timer: NodeJS.Timeout | undefined;
  private readonly firstWelcome: Promise<void>;
  private welcomed!: () => void;
  private refused!: (e: Error) => void;

  constructor(private readonly opts: LiveReceiverOptions) {
    this.delayMs = opts.reconnectMs ?? 1000;
    this.firstWelcome = new Promise<void>((resolve, reject) => {
      this.welcomed = resolve;
      this.refused = reject;
    });
  }

  /** Opens the session; resolves at the first welcome frame, rejects if the first connection fails. */
  start(): Promise<void> {
    this.connect(true);
    return this.firstWelcome;
  }

  private connect(first: boolean): void {
    const { did, device } = this.opts;
    const ws = new WebSocket(liveUrl(this.opts.relayUrl, did, device), { headers: this.proofHeaders() });
    this.socket = ws;
    let welcomed = false;
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      let frame: unknown;
      try {
        frame = JSON.parse(data.toString('utf8'));
      } catch {
        return;
      }
      if (!isJsonObject(frame)) return;
      const f = frame;
      if (!welcomed) {
        if (f.type === 'welcome' && f.status === 'ok' && f.connectionKey === `${did}::${device}`) {
          welcomed = true;
          this.delayMs = this.opts.reconnectMs ?? 1000;
          this.opts.onStatus?.(`live session open for ${did} (device ${device})`);
          if (first) this.welcomed();
        } else {
          ws.close(1002, 'unexpected first frame');
        }
        return;
      }
      this.opts.onEnvelope(f);
    });
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        if (text.length < 4096) text += c;
      });
      res.on('end', () => {
        let code: unknown;
        try {
          code = memberOf(JSON.parse(text), 'code');
        } catch {
          code = undefined;
        }
        const e = Object.assign(new Error(`the Relay refused the live session: HTTP ${res.statusCode}${typeof code === 'string' ? ` ${code}` : ''}`), {
          status: res.statusCode,
          ...(typeof code === 'string' ? { code } : {}),
        });
        if (first && !welcomed) this.refused(e);
        this.opts.onStatus?.(e.message);
        ws.terminate();
      });
    });
    ws.on('error', (e) => {
      if (first && !welcomed) this.refused(e);
    });
    ws.on('close', () => {
      if (first && !welcomed) this.refused(new Error('the live session closed before its welcome frame'));
      if (this.stopped || (first && !welcomed)) return;
      this.opts.onStatus?.(`live session dropped; reconnecting in ${this.delayMs} ms`);
      this.timer = setTimeout(() => this.connect(false), this.delayMs);
      this.delayMs = Math.min(this.delayMs * 2, 30_000);
    });
  }

  /** The proof headers of one connection (a fresh timestamp and nonce each time), or none. */
  private proofHeaders(): Record<string, string> {
    const p = this.opts.proof;
    if (p === undefined) return {};
    const proof = signLiveProof(p.profile, p.signer, this.opts.did, this.opts.device, {
      serviceId: p.serviceId,
      relayEndpoint: normalizeEndpoint(this.opts.relayUrl),
      keyId: p.keyId,
      timestamp: isoSeconds((p.nowMs ?? Date.now)()),
      nonce: randomUUID(),
    });
    return liveProofHeaders(proof);
  }

  /** Closes the session and stops reconnecting. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const ws = this.socket;
    if (ws === undefined || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      ws.once('close', () => resolve());
      ws.close(1000);
    });
  }
}
