/** What the Directory's use cases are built from (the app passes the ledger, the clock and the stores). */
import type { Clock } from '../base/clock.js';
import type { Ed25519KeyPair } from '../crypto/ed25519.js';
import type { DirectoryLedger } from '../ledger/ports.js';
import type { Profile } from '../protocol/profile.js';
import type { DnsChallengeStore } from './dns-challenges.js';

export interface DirectoryDeps {
  /** Reads and the pool; where blocks come from is the app's concern (src/ledger/ports.ts). */
  ledger: DirectoryLedger;
  profile: Profile;
  clock: Clock;
  /**
   * The persona attestor key (one of the genesis `persona_attestors`, ledger-rules.md §4.9.2). Without it DNS
   * challenge verification answers 503 `service_unavailable`.
   */
  attestor?: Ed25519KeyPair;
  /** Where persona DNS challenges live (http-api.md §7.2); the app picks the store (SQLite or PostgreSQL). */
  challenges: DnsChallengeStore;
  /** DNS servers for the persona TXT lookup (`ip` or `ip:port`); default: the system's resolvers. */
  dnsServers?: readonly string[];
  /** Per-attempt DNS timeout; default 3000 ms (2 tries). */
  dnsTimeoutMs?: number;
  /** Memory for rendered resolve bodies (`--directory-resolve-cache-bytes`; 0: none kept); default 64 MiB (a node's: sized by memory, `defaultResolveCacheBytes`). */
  resolveCacheBytes?: number;
  /** Disables the public-endpoint rule of policy writes (http-api.md §8.1; development only). Default false. */
  allowPrivateEndpoints?: boolean;
}
