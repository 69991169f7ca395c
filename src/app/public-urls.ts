/**
 * Where a node's roles are reached: the listening base URL of each role, known once its server listens, and
 * `public_urls.*` as DID documents publish them — configured, else the role's own listening URL, else none.
 * The servers' component fills it when it starts; the parts that publish URLs (the Cache's and the Relay's
 * settings, event processing, the node's registration) read it, and are handed it when they are built.
 */
import type { Config, Role } from './config.js';

type Urls = { readonly relay: readonly string[]; readonly cache: readonly string[] };

/** A node's listening and public URLs. */
export class NodeUrls {
  #listening: Readonly<Partial<Record<Role, string>>> | undefined;
  #public: Urls | undefined;

  constructor(private readonly config: Pick<Config, 'publicUrls'>) {}

  /** Records the listening base URL of every role (once, when the servers listen). */
  bind(urls: Partial<Record<Role, string>>): void {
    if (this.#listening !== undefined) throw new Error('the node listens already');
    const listening = Object.freeze({ ...urls });
    const own = (role: Role): string[] => {
      const url = listening[role];
      return url === undefined ? [] : [url];
    };
    const configured = this.config.publicUrls;
    this.#listening = listening;
    this.#public = Object.freeze({
      relay: Object.freeze(configured.relay.length > 0 ? [...configured.relay] : own('relay')),
      cache: Object.freeze(configured.cache.length > 0 ? [...configured.cache] : own('cache')),
    });
  }

  /** The listening base URL of each role; throws before the servers listen. */
  get listening(): Readonly<Partial<Record<Role, string>>> {
    if (this.#listening === undefined) throw new Error('the node does not listen yet');
    return this.#listening;
  }

  /** `public_urls.*`: before the servers listen, the configured ones only. */
  get public(): Urls {
    return this.#public ?? this.config.publicUrls;
  }

  /** `public_urls.relay`, configured, else the Relay's listening URL once it listens. */
  readonly relay = (): readonly string[] => this.public.relay;
  /** `public_urls.cache`, configured, else the Cache's listening URL once it listens. */
  readonly cache = (): readonly string[] => this.public.cache;
}
