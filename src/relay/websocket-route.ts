/**
 * `GET /ws/{did}/{device}` (http-api.md §10.8), with live-session authentication (`--relay-live-auth`,
 * src/relay/live-auth.ts). Every refusal before the upgrade is an ordinary HTTP response with the §0.6 JSON error
 * body — a wrong method, a handshake the WebSocket library would refuse, a bad path, a refused proof, a cap — never
 * text/html or a dropped connection. After the upgrade:
 * - a proof sent in the headers, or none under `open`: the welcome frame at once, then bare envelopes;
 * - `?auth=first-frame` (clients that cannot set headers): nothing until the first frame brings a proof that holds
 *   (then the welcome); a bad or missing one within the deadline closes the socket with `4000 + status` and the
 *   error code as the reason (e.g. `4403 invalid_signature`, `4401 live_proof_required`).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Clock } from '../base/clock.js';
import { DdnError, isDdnError, type ErrorCode } from '../base/errors.js';
import { utf8Length } from '../base/bytes.js';
import { toDdnError } from '../http/error-body.js';
import type { UpgradeRoute } from '../http/route.js';
import { checkUpgradeHandshake, echoRequestIds, refuseUpgrade, tagUpgrade, UPGRADE_CODES, upgradeIdOf, upgradeLogger } from '../http/websocket-upgrade.js';
import { decodePathSegments, splitTarget } from '../http/url.js';
import type { DidView, DirectoryPort } from '../ports/directory-port.js';
import type { NonceClaim } from '../ports/nonce-registry.js';
import { isDid } from '../protocol/did.js';
import { LIVE_FIRST_FRAME_QUERY, type LiveProof } from '../protocol/live-proof.js';
import type { Profile } from '../protocol/profile.js';
import { checkLiveProof, liveProofFromFrame, liveProofFromHeaders, type LiveAuthMode } from './live-auth.js';
import { LIVE_RETRY_AFTER_SECONDS, type LiveSessions } from './live-sessions.js';

/** How sessions authenticate (`--relay-live-auth` and what the check needs). */
export interface LiveAuthOptions {
  mode: LiveAuthMode;
  profile: Profile;
  clock: Clock;
  skewSeconds: number;
  /** `public_urls.relay`: a proof names one of them. */
  publicRelayUrls(): readonly string[];
  /** Records a nonce once; false when it was already used (the Relay's staging store, SQLite or PostgreSQL). */
  claimNonce(claim: NonceClaim, nowMs: number): Promise<boolean>;
  /** How long a first-frame session has to send its proof. */
  firstFrameTimeoutMs: number;
}

export interface WebSocketRouteOptions {
  basePath: string;
  directory: DirectoryPort;
  sessions: LiveSessions;
  auth: LiveAuthOptions;
  logger?: Logger;
}

/**
 * Every code `GET /ws/{did}/{device}` can refuse its upgrade with (its OpenAPI entry): the handshake's, the path's
 * (a percent-encoding that does not decode, the DID, the device), live sessions off, the caps, the DID's record
 * (and the Directory's failure to give it), the proof headers' checks and the nonce's single use.
 */
export const LIVE_UPGRADE_ERRORS: readonly ErrorCode[] = [
  ...UPGRADE_CODES,
  'invalid_path',
  'invalid_did',
  'live_sessions_disabled',
  'rate_limited',
  'did_not_found',
  'did_deactivated',
  'policy_lookup_failed',
  'ledger_unavailable',
  'missing_proof_header',
  'invalid_proof_header',
  'proof_timestamp_out_of_window',
  'live_service_not_found',
  'relay_endpoint_mismatch',
  'key_not_authorized',
  'invalid_signature',
  'proof_nonce_replayed',
  'live_proof_required',
];

/** The largest client frame read (a proof frame is far smaller). */
const MAX_CLIENT_FRAME_BYTES = 64 * 1024;

/** Parses `/ws/{did}/{device}` under the base path; undefined for any other path. */
export function parseWsPath(rawUrl: string, basePath: string): { did: string; device: string } | undefined {
  const { path } = splitTarget(rawUrl);
  const segs = decodePathSegments(path);
  const base = basePath.split('/').filter(Boolean);
  if (segs.length !== base.length + 3 || base.some((b, i) => segs[i] !== b) || segs[base.length] !== 'ws') return undefined;
  return { did: segs[base.length + 1]!, device: segs[base.length + 2]! };
}

/** True when the request asks for first-frame authentication (`?auth=first-frame`). */
function wantsFirstFrame(rawUrl: string): boolean {
  return splitTarget(rawUrl).query.split('&').includes(LIVE_FIRST_FRAME_QUERY);
}

/** §10.8's checks before the upgrade: the path's DID and device, the DID's record (asked for upgrade `requestId`), the caps. Returns the record. */
async function admit(opts: WebSocketRouteOptions, did: string, device: string, requestId: string | undefined): Promise<DidView> {
  if (!isDid(did)) throw new DdnError('invalid_did', 'malformed DID');
  if (device.length === 0 || utf8Length(device) > 64 || device.trim() !== device) {
    throw new DdnError('invalid_request', 'device must be 1–64 bytes without surrounding whitespace', { field: 'device' });
  }
  opts.sessions.checkCapacity(did);
  const rec = await opts.directory.getDid(did, requestId);
  if (!rec) throw new DdnError('did_not_found', 'DID not found');
  if (rec.deactivated) throw new DdnError('did_deactivated', 'DID is deactivated');
  return rec;
}

/** Checks a proof for `did`/`device`, then records its nonce (409 `proof_nonce_replayed` when already used). */
async function authenticate(a: LiveAuthOptions, rec: DidView, did: string, device: string, proof: LiveProof): Promise<void> {
  const nowMs = a.clock.nowMs();
  const claim = checkLiveProof({
    profile: a.profile,
    did,
    device,
    proof,
    document: rec.document,
    publicRelayUrls: a.publicRelayUrls(),
    nowMs,
    skewSeconds: a.skewSeconds,
  });
  if (!(await a.claimNonce(claim, nowMs))) throw new DdnError('proof_nonce_replayed', 'this live-session proof was already used');
}

/** A refused upgrade: the JSON error body, `Retry-After` on 429 and 503. */
function refuse(socket: Duplex, req: IncomingMessage, err: DdnError): void {
  refuseUpgrade(socket, req, err, (e) => (e.status === 429 || e.status === 503 ? LIVE_RETRY_AFTER_SECONDS : undefined));
}

/** Closes a socket for a refused session: `4000 + status`, the code as the reason. */
function closeRefused(ws: WebSocket, err: DdnError): void {
  ws.close(4000 + err.status, err.code);
}

/** What the upgrade leads to. */
type Admission = { kind: 'open'; authenticated: boolean } | { kind: 'first-frame' };

async function decide(opts: WebSocketRouteOptions, req: IncomingMessage, did: string, device: string): Promise<{ admission: Admission; rec: DidView }> {
  const { auth } = opts;
  if (auth.mode === 'off') throw new DdnError('live_sessions_disabled', 'live sessions are disabled on this Relay');
  checkUpgradeHandshake(req);
  const header = (name: string): string | undefined => {
    const v = req.headers[name.toLowerCase()];
    return Array.isArray(v) ? v[0] : v;
  };
  const rec = await admit(opts, did, device, upgradeIdOf(req));
  const proof = liveProofFromHeaders(header);
  if (proof !== undefined) {
    await authenticate(auth, rec, did, device, proof);
    return { admission: { kind: 'open', authenticated: true }, rec };
  }
  if (wantsFirstFrame(req.url ?? '/')) return { admission: { kind: 'first-frame' }, rec };
  if (auth.mode === 'required') {
    throw new DdnError('live_proof_required', 'a live session must prove control of the DID (proof headers, or ?auth=first-frame)');
  }
  return { admission: { kind: 'open', authenticated: false }, rec };
}

/** A first-frame session: its proof must arrive within the deadline; nothing is sent to it before. */
function awaitFirstFrame(opts: WebSocketRouteOptions, req: IncomingMessage, ws: WebSocket, rec: DidView, did: string, device: string): void {
  const pending = opts.sessions.addPending(did, device, ws);
  if (pending === undefined) return;
  const timer = setTimeout(
    () => closeRefused(ws, new DdnError('live_proof_required', 'no live-session proof within the deadline')),
    opts.auth.firstFrameTimeoutMs,
  );
  ws.on('close', () => clearTimeout(timer));
  ws.once('message', (data, isBinary) => {
    clearTimeout(timer);
    const text = isBinary ? '' : Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8');
    Promise.resolve()
      .then(() => authenticate(opts.auth, rec, did, device, liveProofFromFrame(text)))
      .then(() => {
        if (ws.readyState === ws.OPEN) pending.open();
      })
      .catch((e: unknown) => {
        if (!isDdnError(e)) upgradeLogger(opts.logger, req)?.error({ err: e }, 'live-session proof check failed');
        closeRefused(ws, toDdnError(e));
      });
  });
}

/** `GET /ws/{did}/{device}` in the Relay's route list, and its sessions' WebSocket server (closed with the node). */
export function liveRoute(opts: WebSocketRouteOptions): { route: UpgradeRoute; wss: WebSocketServer } {
  const wss = new WebSocketServer({ noServer: true, handleProtocols: () => false, maxPayload: MAX_CLIENT_FRAME_BYTES });
  // A handshake the library refuses after the checks above (e.g. a malformed Sec-WebSocket-Protocol) is JSON too.
  wss.on('wsClientError', (err: Error, socket: Duplex, req: IncomingMessage) => refuse(socket, req, new DdnError('invalid_request', err.message)));
  echoRequestIds(wss);
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    tagUpgrade(req);
    let target: { did: string; device: string } | undefined;
    try {
      target = parseWsPath(req.url ?? '/', opts.basePath);
    } catch (e) {
      refuse(socket, req, toDdnError(e));
      return;
    }
    if (!target) {
      refuse(socket, req, new DdnError('not_found', 'no such route'));
      return;
    }
    const { did, device } = target;
    decide(opts, req, did, device).then(
      ({ admission, rec }) => {
        try {
          // the caps again, synchronously with the upgrade: other sessions may have opened meanwhile
          opts.sessions.checkCapacity(admission.kind === 'open' ? did : undefined);
        } catch (e) {
          refuse(socket, req, toDdnError(e));
          return;
        }
        wss.handleUpgrade(req, socket, head, (ws) => {
          if (admission.kind === 'first-frame') {
            awaitFirstFrame(opts, req, ws, rec, did, device);
            return;
          }
          ws.on('message', () => undefined); // client data frames are ignored
          opts.sessions.add(did, device, ws, admission.authenticated);
        });
      },
      (e: unknown) => {
        if (!isDdnError(e)) upgradeLogger(opts.logger, req)?.error({ err: e }, 'websocket admission failed');
        refuse(socket, req, toDdnError(e));
      },
    );
  };
  const route: UpgradeRoute = {
    kind: 'upgrade',
    doc: {
      path: '/ws/{did}/{device}',
      summary: "A device's live session: envelopes pushed as they arrive (§10.8)",
      parameters: [
        { name: 'did', in: 'path', description: 'the recipient DID' },
        { name: 'device', in: 'path', description: 'the device id' },
      ],
      errors: LIVE_UPGRADE_ERRORS,
      messages: 'Server → client: one JSON envelope per text frame; --relay-live-auth decides the proof headers asked for.',
    },
    attach: (server) => void server.on('upgrade', onUpgrade),
  };
  return { route, wss };
}
