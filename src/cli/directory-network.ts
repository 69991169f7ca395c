/**
 * Which network a Directory serves: its chain id and genesis hash, from `GET /health` (asked once per URL and
 * process). The identity book is keyed by it, so an alias means the identity of the network a command talks to.
 */
import { DirectoryClient } from '../client/directory-client.js';
import type { FetchLike } from '../client/http.js';
import type { HealthResponse } from '../client/types.js';

/** A network: the chain id and the hash of its genesis block. */
export interface Network {
  chain_id: string;
  genesis_hash: string;
}

const answers = new Map<string, Promise<HealthResponse>>();

/** `GET /health` of the Directory at `url`, asked once per process. */
export function directoryHealth(url: string, fetch: FetchLike): Promise<HealthResponse> {
  const key = url.replace(/\/+$/, '');
  let answer = answers.get(key);
  if (answer === undefined) {
    answer = new DirectoryClient(url, { fetch }).health();
    answers.set(key, answer);
    answer.catch(() => answers.delete(key));
  }
  return answer;
}

/** The network of a health answer (a Directory that does not say its genesis hash is known by its chain id alone). */
export function networkOf(h: Pick<HealthResponse, 'chain_id' | 'genesis_hash'>): Network {
  return { chain_id: h.chain_id, genesis_hash: h.genesis_hash ?? '' };
}

/** True when `a` and `b` are the same network. */
export function sameNetwork(a: Network | undefined, b: Network | undefined): boolean {
  return a !== undefined && b !== undefined && a.chain_id === b.chain_id && a.genesis_hash === b.genesis_hash;
}

/** `chain_id (genesis 0x1234…abcd)`, how messages name a network. */
export function networkName(n: Network): string {
  const g = n.genesis_hash;
  return g === '' ? n.chain_id : `${n.chain_id} (genesis ${g.length > 14 ? `${g.slice(0, 8)}…${g.slice(-4)}` : g})`;
}
