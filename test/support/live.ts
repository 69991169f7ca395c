/**
 * Live sessions in tests: signed live-session proofs (src/protocol/live-proof.ts) for a registered recipient, a
 * WebSocket client that records its frames, the HTTP refusal of an upgrade, and recorded sessions for a fan-out.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import type { Ed25519KeyPair } from '../../src/crypto/ed25519.js';
import { liveProofHeaders, signLiveProof, type LiveProof } from '../../src/protocol/live-proof.js';
import type { LocalLiveSessions } from '../../src/relay/live-fanout.js';
import { NO_REACH, type LiveReach } from '../../src/relay/live-sessions.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { checkAnswer } from './contract-check.js';

type Body = Record<string, unknown>;

/** Who signs: a recipient of test/cache/harness.ts (`#key-1` authorised by `#cache`). */
export interface LiveSigner {
  did: string;
  key: Pick<Ed25519KeyPair, 'sign'>;
  keyId: string;
  serviceId: string;
}

/** Changes to a proof (`sign*` change what is signed, the rest what is sent). */
export interface LiveProofOverrides {
  did?: string;
  device?: string;
  key?: Pick<Ed25519KeyPair, 'sign'>;
  keyId?: string;
  serviceId?: string;
  relayEndpoint?: string;
  timestamp?: string;
  nonce?: string;
}

/** ISO-8601 seconds with `Z`. */
function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** A fresh proof of `s` for `device` at the Relay `relayUrl` (profile platform unless given). */
export function liveProof(s: LiveSigner, device: string, relayUrl: string, over: LiveProofOverrides = {}, profile = 'platform'): LiveProof {
  return signLiveProof(makeProfile(profile), over.key ?? s.key, over.did ?? s.did, over.device ?? device, {
    serviceId: over.serviceId ?? s.serviceId,
    relayEndpoint: over.relayEndpoint ?? relayUrl,
    keyId: over.keyId ?? s.keyId,
    timestamp: over.timestamp ?? isoSeconds(Date.now()),
    nonce: over.nonce ?? randomUUID(),
  });
}

/** The proof headers of {@link liveProof}. */
export function liveHeaders(s: LiveSigner, device: string, relayUrl: string, over: LiveProofOverrides = {}, profile = 'platform'): Record<string, string> {
  return liveProofHeaders(liveProof(s, device, relayUrl, over, profile));
}

/** A WebSocket client that records every frame. */
export interface LiveClient {
  ws: WebSocket;
  frames: string[];
  /** Code and reason of the close. */
  closed: Promise<{ code: number; reason: string }>;
  /** Resolves once frame number `i` (0 = the first) has arrived. */
  frame(i: number): Promise<string>;
  /** Resolves with the next frame after the ones seen so far. */
  next(): Promise<string>;
}

/** Opens a socket; resolves once it is open (before any frame). `autoPong: false`: the client leaves pings unanswered. */
export function openLive(url: string, headers: Record<string, string> = {}, o: { autoPong?: boolean } = {}): Promise<LiveClient> {
  const ws = new WebSocket(url, { headers, autoPong: o.autoPong ?? true });
  const frames: string[] = [];
  const waiters: { i: number; resolve: (s: string) => void }[] = [];
  ws.on('message', (d: Buffer) => {
    frames.push(d.toString('utf8'));
    for (const w of waiters.splice(0)) {
      if (frames.length > w.i) w.resolve(frames[w.i]!);
      else waiters.push(w);
    }
  });
  const frame = (i: number) =>
    new Promise<string>((resolve) => {
      if (frames.length > i) resolve(frames[i]!);
      else waiters.push({ i, resolve });
    });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })),
  );
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, frames, closed, frame, next: () => frame(frames.length) }));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res: IncomingMessage) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
}

/** Opens a socket and waits for its first frame (the welcome). */
export async function connectLive(url: string, headers: Record<string, string> = {}, o: { autoPong?: boolean } = {}): Promise<LiveClient> {
  const c = await openLive(url, headers, o);
  await c.frame(0);
  return c;
}

/** The HTTP refusal of an upgrade: status, JSON body and headers. */
export function liveRefusal(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Body; headers: IncomingMessage['headers'] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on('error', () => undefined);
    ws.once('open', () => reject(new Error('upgrade was accepted')));
    ws.once('unexpected-response', (_req, res: IncomingMessage) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('end', () => {
        const body = JSON.parse(text) as Body;
        // a refusal before the upgrade carries a code the route's OpenAPI entry lists for its status
        checkAnswer(url, 'GET', res.statusCode ?? 0, body);
        resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
      });
    });
  });
}

/**
 * A process's local sessions for a fan-out (src/relay/live-fanout.ts `LocalLiveSessions`): one session of each DID
 * it was opened for, recording what is pushed to them; opening and closing tell the watcher, as LiveSessions does.
 */
export class RecordingSessions implements LocalLiveSessions {
  readonly pushed: { did: string; text: string }[] = [];
  private readonly open = new Set<string>();
  private watcher: ((did: string) => void) | undefined;
  private waiters: (() => void)[] = [];

  constructor(...dids: string[]) {
    for (const did of dids) this.open.add(did);
  }

  /** Opens (or closes) the session of `did`. */
  set(did: string, open: boolean): void {
    if (this.open.has(did) === open) return;
    if (open) this.open.add(did);
    else this.open.delete(did);
    this.watcher?.(did);
  }

  count(did: string): number {
    return this.open.has(did) ? 1 : 0;
  }

  dids(): Iterable<string> {
    return this.open;
  }

  watch(changed: (did: string) => void): void {
    this.watcher = changed;
  }

  push(did: string, text: string): LiveReach {
    if (!this.open.has(did)) return NO_REACH;
    this.pushed.push({ did, text });
    for (const w of this.waiters.splice(0)) w();
    return { sessions: 1, authenticated: 1 };
  }

  /** The texts pushed so far. */
  get texts(): string[] {
    return this.pushed.map((p) => p.text);
  }

  /** Resolves once `n` pushes were recorded. */
  async received(n: number): Promise<void> {
    while (this.pushed.length < n) await new Promise<void>((r) => this.waiters.push(r));
  }
}
