/**
 * How the roles of a node reach the Directory: this node's ledger when it runs the Directory or no remote one is
 * configured, else the remote Directory over HTTP, its answers reused for `--directory-view-ttl-ms` by every role
 * of the process (src/adapters/directory-view-cache.ts). Part of the composition root.
 */
import { HttpDirectoryPort } from '../adapters/directory-port-http.js';
import { DirectoryViewCache, FreshDidRecords } from '../adapters/directory-view-cache.js';
import { LocalDirectoryPort } from '../directory/local-port.js';
import type { Ledger } from '../ledger/chain.js';
import type { DirectoryPort } from '../ports/directory-port.js';
import { runs, type NodeContext } from './node-context.js';
import { DirectoryProbe } from './readiness.js';

/** The Directory as the roles see it. */
export interface DirectoryAccess {
  /** The remote Directory's base URLs (tried in turn), or null when this node's ledger answers. */
  readonly remote: readonly string[] | null;
  /** Lookups of the roles (answers may be reused). */
  readonly directory: DirectoryPort;
  /** The Cache's: DID records, which authenticate proofs and sender signatures, never reused (node DIDs may be). */
  readonly cacheDirectory: DirectoryPort;
  /** Whether the remote Directory answers (readiness, health), when there is one. */
  readonly probe?: DirectoryProbe;
}

/** The Directory the roles ask: a remote one when configured and this node does not run it, else the ledger. */
export function directoryAccess(ctx: NodeContext, ledger: Ledger): DirectoryAccess {
  const { config, clock, logger, metrics } = ctx;
  const remote = config.directoryUrl.length > 0 && !runs(ctx, 'directory') ? config.directoryUrl : null;
  if (remote === null) {
    const local = new LocalDirectoryPort(ledger, clock);
    return { remote, directory: local, cacheDirectory: local };
  }
  const http = new HttpDirectoryPort(remote, { logger });
  ctx.lifecycle.add({ name: 'remote directory', stop: () => http.close() });
  const probe = new DirectoryProbe(http, clock);
  const ttlMs = config.directoryViewTtlMs;
  if (ttlMs <= 0) return { remote, directory: http, cacheDirectory: http, probe };
  const view = new DirectoryViewCache(http, clock, { ttlMs });
  metrics.countedBy('ddn_directory_view_lookups_total', "Lookups of the remote Directory's answers: hit (reused) or miss (asked)", 'result', () => {
    const { hits, misses } = view.lookups;
    return { hit: hits, miss: misses };
  });
  return { remote, directory: view, cacheDirectory: new FreshDidRecords(view, http), probe };
}
