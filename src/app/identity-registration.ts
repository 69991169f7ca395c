/**
 * The node identity's registration as a component: registered in this node's ledger (its Directory service
 * called directly, or without the Directory role a private one on this node's ledger) or at the remote Directory
 * through the SDK; idempotent across restarts. Started once the node listens (the service lists its public
 * URLs), stopped first. Part of the composition root.
 */
import type { Logger } from 'pino';
import { failoverFetch } from '../adapters/failover-fetch.js';
import { DirectoryClient } from '../client/directory-client.js';
import { DirectoryService } from '../directory/service.js';
import type { Ledger } from '../ledger/chain.js';
import type { NodeIdentity } from '../protocol/node-signature.js';
import type { Profile } from '../protocol/profile.js';
import { SqliteDnsChallengeStore } from '../store/sqlite/dns-challenge-store.js';
import type { Component } from './lifecycle.js';
import { localRegistrationDirectory } from './local-registration.js';
import type { NodeContext } from './node-context.js';
import type { NodeDataDir } from './node-ledger.js';
import { startNodeRegistration, type NodeRegistration, type RegistrationDirectory } from './node-registration.js';
import type { NodeUrls } from './public-urls.js';

/** Per-request timeout of the node identity registration at a remote Directory. */
const REGISTRATION_TIMEOUT_MS = 10_000;

/** The background registration of the node identity. */
export class IdentityRegistration implements Component {
  readonly name = 'identity registration';
  #running: NodeRegistration | undefined;

  constructor(
    private readonly registrar: RegistrationDirectory,
    private readonly o: { profile: Profile; identity: NodeIdentity; acting: 'relay' | 'cache'; urls: NodeUrls; logger: Logger },
    /** Aborts the registration's requests in flight when it stops. */
    private readonly requests: AbortController,
  ) {}

  /** Resolves once the node DID is confirmed with its current document; throws before the start. */
  get ready(): Promise<void> {
    if (this.#running === undefined) throw new Error('the identity registration has not started');
    return this.#running.ready;
  }

  start(): void {
    const { profile, identity, urls } = this.o;
    this.#running = startNodeRegistration({
      client: this.registrar,
      profile,
      identity,
      serviceUrls: this.o.acting === 'relay' ? urls.public.relay : urls.public.cache,
      logger: this.o.logger.child({ role: 'node' }),
    });
  }

  stop(): Promise<void> | undefined {
    this.requests.abort();
    return this.#running?.stop();
  }
}

/** The node identity's registration, at the remote Directory when the roles use one, else in this node's ledger. */
export function identityRegistration(
  ctx: NodeContext,
  deps: { dataDir: NodeDataDir; remote: readonly string[] | null; ledger: Ledger; directoryService: DirectoryService | undefined; urls: NodeUrls },
): IdentityRegistration {
  const { profile, logger, clock } = ctx;
  const { remote, ledger } = deps;
  const requests = new AbortController();
  const registrar: RegistrationDirectory =
    remote !== null
      ? new DirectoryClient(remote[0]!, {
          profile,
          fetch: failoverFetch(
            remote,
            (url, init) => globalThis.fetch(url, { ...init, signal: AbortSignal.any([requests.signal, AbortSignal.timeout(REGISTRATION_TIMEOUT_MS)]) }),
            logger,
          ),
        })
      : localRegistrationDirectory(
          // without the Directory role, a private service on this node's ledger
          deps.directoryService ??
            new DirectoryService({ ledger, profile, clock, attestor: deps.dataDir.keys.attestor, challenges: SqliteDnsChallengeStore.inMemory() }),
          profile,
        );
  const { identity, acting } = deps.dataDir;
  return ctx.lifecycle.add(new IdentityRegistration(registrar, { profile, identity, acting, urls: deps.urls, logger }, requests));
}
