/**
 * Registers the node identity (http-api.md §0.1, §10.6): in this node's own ledger (its Directory service called
 * directly, src/app/local-registration.ts) or at a remote Directory through the SDK (`--directory-url`). Idempotent
 * across restarts: a confirmed DID is left alone unless its service (`#relay`, or `#cache` on a Cache-only node) no
 * longer lists the node's public URLs, which are then updated. Runs in the background with backoff until the DID is
 * confirmed with the wanted service, or until stopped.
 */
import type { Logger } from 'pino';
import { DdnError } from '../base/errors.js';
import { realRetryTiming, retry } from '../base/retry.js';
import type { Ed25519KeyPair } from '../crypto/ed25519.js';
import type { ActionFields } from '../client/actions.js';
import type { RegisterArgs } from '../client/directory-client.js';
import { DirectoryApiError } from '../client/http.js';
import type { DidDocumentJson, DidRecordResponse, RegistrationStatusResponse, ServiceJson } from '../client/types.js';
import type { Service } from '../protocol/document.js';
import type { NodeIdentity } from '../protocol/node-signature.js';
import type { Profile } from '../protocol/profile.js';
import { nodeDocument, nodeServiceOf, serviceMatches } from '../relay/node-identity.js';

/** The document actions the registration submits. */
export type ServiceAction = 'AddService' | 'UpdateService';

/**
 * What the registration asks of a Directory: a remote one's SDK `DirectoryClient` satisfies it, and so does this
 * node's own Directory service (src/app/local-registration.ts).
 */
export interface RegistrationDirectory {
  registrationStatus(did: string): Promise<RegistrationStatusResponse>;
  resolve(did: string): Promise<DidRecordResponse>;
  register(args: RegisterArgs): Promise<unknown>;
  mutate(did: string, key: Ed25519KeyPair, signerKeyId: string, action: ServiceAction, fields: ActionFields[ServiceAction]): Promise<unknown>;
}

/** Options of {@link startNodeRegistration}. */
export interface NodeRegistrationOptions {
  client: RegistrationDirectory;
  profile: Profile;
  identity: NodeIdentity;
  /** The public URLs the node's service must list (none: no service). */
  serviceUrls: readonly string[];
  logger?: Logger;
  /** Pause while a registration or change waits for finality (default 200 ms). */
  pollMs?: number;
  /** First pause after a failure, doubled up to `maxRetryMs` (defaults 500 ms, 30 s). */
  retryMs?: number;
  maxRetryMs?: number;
}

/** A running registration. */
export interface NodeRegistration {
  /** Resolves once the DID is confirmed with the wanted document (never rejects; stays pending if stopped). */
  readonly ready: Promise<void>;
  /** Stops retrying; resolves when the loop has ended. */
  stop(): Promise<void>;
}

type Step = 'done' | 'wait';

function toServiceJson(s: Service): ServiceJson {
  return { id: s.id, type: s.type, serviceEndpoint: [...s.serviceEndpoint], authorization: [...(s.authorization ?? [])] };
}

function fromServiceJson(s: ServiceJson): Service {
  return {
    id: s.id,
    type: s.type,
    serviceEndpoint: Array.isArray(s.serviceEndpoint) ? s.serviceEndpoint : [s.serviceEndpoint],
    authorization: s.authorization ?? null,
    priority: s.priority ?? null,
  };
}

/** What the loop remembers between passes. */
interface LoopState {
  /** A registration was submitted and has not been seen pending or confirmed since. */
  submitted: boolean;
}

/** One pass: registers, waits, or updates the node's service; 'done' when nothing is left to do. */
async function step(o: NodeRegistrationOptions, state: LoopState): Promise<Step> {
  const { client, identity } = o;
  const status = await client.registrationStatus(identity.did);
  if (status.registration_status === 'pending') return 'wait';
  if (status.registration_status !== 'confirmed') {
    if (state.submitted) {
      // Our registration left the pool without confirming: back off before submitting again.
      state.submitted = false;
      throw new Error(`the node DID registration failed: ${status.last_error?.code ?? 'not included'}`);
    }
    const doc = nodeDocument(o.profile, identity, o.serviceUrls);
    const didDocument: DidDocumentJson = {
      id: doc.id,
      verificationMethod: doc.verificationMethod,
      authentication: doc.authentication ?? [],
      ...(doc.service === null ? {} : { service: doc.service.map(toServiceJson) }),
    };
    await client.register({ did: identity.did, key: identity.key, didDocument });
    state.submitted = true;
    o.logger?.info({ node_did: identity.did }, 'node identity registration submitted');
    return 'wait';
  }
  if (status.deactivated) {
    o.logger?.error({ node_did: identity.did }, 'the node DID is deactivated; node-signed requests will be refused');
    return 'done';
  }
  const wanted = nodeServiceOf(o.profile, identity, o.serviceUrls);
  if (wanted === null) return 'done';
  const record = await client.resolve(identity.did);
  const current = record.document?.service.find((s) => s.id === wanted.id);
  if (serviceMatches(current === undefined ? undefined : fromServiceJson(current), wanted)) return 'done';
  if (record.pending_document_action === true) return 'wait';
  const action = current === undefined ? 'AddService' : 'UpdateService';
  await client.mutate(identity.did, identity.key, 'root', action, { service: toServiceJson(wanted) });
  o.logger?.info({ node_did: identity.did, endpoints: wanted.serviceEndpoint }, 'node service update submitted');
  return 'wait';
}

/** Starts the background registration of `o.identity`. */
export function startNodeRegistration(o: NodeRegistrationOptions): NodeRegistration {
  const pollMs = o.pollMs ?? 200;
  const backoff = { firstMs: o.retryMs ?? 500, maxMs: o.maxRetryMs ?? 30_000 };
  const stopping = new AbortController();
  const { signal } = stopping;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const state: LoopState = { submitted: false };
  // each pass retries its failures with a back-off that starts over once a pass succeeds
  const pass = () =>
    retry(() => step(o, state), {
      attempts: Infinity,
      retryable: () => !signal.aborted,
      backoff,
      signal,
      onRetry: ({ error }) => {
        const code = error instanceof DirectoryApiError || error instanceof DdnError ? error.code : undefined;
        const reason = error instanceof Error ? error.message : String(error);
        o.logger?.warn({ node_did: o.identity.did, code, reason }, 'node identity registration failed; retrying');
      },
    });
  const loop = (async () => {
    try {
      while ((await pass()) === 'wait') await realRetryTiming.sleep(pollMs, signal);
      markReady();
    } catch {
      // stopped (the pause or the pass in flight ended by the abort)
    }
  })();
  return {
    ready,
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}
