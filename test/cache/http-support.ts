/** Driving a real node over HTTP: the Directory adapter the registration flows need, and plain fetch helpers. */
import type { RunningNode } from '../../src/app/node.js';
import { makeProfile } from '../../src/protocol/profile.js';
import type { DirectoryHarness } from '../support/directory-harness.js';

type Body = Record<string, unknown>;

/** A Directory harness over a node's real Directory URL; `settle()` produces blocks in-process. */
export function httpDirectory(node: RunningNode): Pick<DirectoryHarness, 'call' | 'settle' | 'profile'> {
  return {
    profile: makeProfile(node.config.profile),
    async call(method, url, payload) {
      const res = await fetch(`${node.urls.directory!}${url}`, {
        method,
        ...(payload === undefined ? {} : { body: JSON.stringify(payload), headers: { 'content-type': 'application/json' } }),
      });
      return { status: res.status, body: (await res.json()) as Body };
    },
    settle() {
      while (node.ledger.produceBlock() !== null) {
        // every pooled extrinsic is now in a final block
      }
    },
  };
}

export interface FetchReply {
  status: number;
  body: Body;
}

/** A JSON request; the reply body is parsed. */
export async function fetchJson(url: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<FetchReply> {
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    ...(init.body === undefined ? {} : { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
  });
  return { status: res.status, body: (await res.json()) as Body };
}
