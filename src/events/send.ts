/**
 * The Send step (http-api.md §10.9): a control envelope `{message_id (new UUID v4), to: recipient_did, tag:
 * "<p>:control", timestamp: now, ttl: "24h", application_id?, payload}` whose payload is the rendered JSON in a
 * `<p>:binary-chunk:v1` record (`control.json`, `application/json`), encrypted with the
 * `<p>:cbor-chunk:x25519-hkdf-sha256-chacha20poly1305:v1` profile to the recipient's first X25519 key agreement.
 * It is posted to a Relay (`POST /relay`, unsigned: it is a new envelope, not a forwarded one) — the configured
 * `--event-relay-url`s, else this node's own Relay, else the recipient's `<P>RelayService` endpoints — which
 * delivers it by the recipient's policy or base-DID delivery. A recipient without a key agreement is skipped.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { isoMs, type Clock } from '../base/clock.js';
import { sha256 } from '../crypto/hash.js';
import type { DirectoryPort } from '../ports/directory-port.js';
import { encodeFileRecord } from '../protocol/file-record.js';
import { decodeX25519Multibase } from '../protocol/keys.js';
import { sealPayload } from '../protocol/payload-crypto.js';
import type { Profile } from '../protocol/profile.js';
import { OutboundError, type OutboundHttp } from '../outbound/outbound-http.js';

const KEY_AGREEMENT_TYPES = new Set(['X25519KeyAgreementKey2020', 'X25519KeyAgreementKey2019', 'Multikey']);

/** What a Send needs. */
export interface SendDeps {
  profile: Profile;
  clock: Clock;
  directory: DirectoryPort;
  outbound: OutboundHttp;
  /** Relays to post to before falling back to the recipient's; empty → the recipient's. */
  relayUrls(): readonly string[];
  logger?: Logger;
}

/** Builds the control envelope of a Send to `recipient` (null when it has no usable key agreement). */
export async function controlEnvelope(
  deps: Pick<SendDeps, 'profile' | 'clock' | 'directory'>,
  recipient: string,
  rendered: unknown,
  applicationId: string | null,
): Promise<{ envelope: Record<string, unknown>; relays: string[] } | null> {
  const rec = await deps.directory.getDid(recipient);
  if (rec === null || rec.deactivated) return null;
  const ka = (rec.document?.keyAgreement ?? []).find((k) => KEY_AGREEMENT_TYPES.has(k.type) && decodeX25519Multibase(k.publicKeyMultibase) !== undefined);
  if (ka === undefined) return null;
  const data = new Uint8Array(Buffer.from(JSON.stringify(rendered), 'utf8'));
  const record = encodeFileRecord(deps.profile, {
    name: 'control.json',
    mediaType: 'application/json',
    sizeBytes: data.length,
    sha256: sha256(data),
    groupId: '',
    sequence: 0,
    total: 1,
    data,
  });
  const messageId = randomUUID();
  const payload = sealPayload(deps.profile, {
    recipientKeyId: ka.id,
    recipientPublicKey: decodeX25519Multibase(ka.publicKeyMultibase)!,
    plaintext: record,
    aad: { messageId, to: recipient, groupId: '', sequence: 0, total: 1 },
  });
  const envelope: Record<string, unknown> = {
    message_id: messageId,
    to: recipient,
    tag: deps.profile.controlTag,
    timestamp: isoMs(deps.clock.nowMs()),
    ttl: '24h',
    ...(applicationId === null ? {} : { application_id: applicationId }),
    payload,
  };
  const relays = (rec.document?.service ?? []).filter((s) => s.type === deps.profile.relayServiceType).flatMap((s) => s.serviceEndpoint);
  return { envelope, relays };
}

/** Runs a Send; true when a Relay accepted the control envelope (2xx with `success: true`). */
export async function runSend(deps: SendDeps, recipient: string, rendered: unknown, applicationId: string | null): Promise<boolean> {
  const built = await controlEnvelope(deps, recipient, rendered, applicationId);
  if (built === null) {
    deps.logger?.info({ recipient }, 'Send skipped: the recipient has no usable key agreement');
    return false;
  }
  const configured = deps.relayUrls();
  const relays = configured.length > 0 ? configured : built.relays;
  const body = Buffer.from(JSON.stringify(built.envelope), 'utf8');
  for (const relay of relays) {
    try {
      const res = await deps.outbound.request({
        method: 'POST',
        url: `${relay.replace(/\/+$/, '')}/relay`,
        headers: { 'content-type': 'application/json' },
        body,
        timeoutMs: 10_000,
      });
      const parsed = JSON.parse(res.body.toString('utf8') || 'null') as { success?: unknown } | null;
      if (res.status >= 200 && res.status < 300 && parsed?.success === true) return true;
      deps.logger?.info({ relay, status: res.status }, 'Send refused by the Relay');
    } catch (err) {
      if (!(err instanceof OutboundError) && !(err instanceof SyntaxError)) throw err;
      deps.logger?.info({ relay, err: err.message }, 'Send failed');
    }
  }
  return false;
}
