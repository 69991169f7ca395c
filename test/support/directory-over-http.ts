/**
 * Directory processes of one ledger on PostgreSQL (`ddn serve --roles directory` children) and what the flows of
 * directory-flows.ts need of a Directory, over HTTP to such a child (blocks come from the ledger's producer).
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { ATTESTOR_KEY_FILE, GENESIS_FILE } from '../../src/app/node-keys.js';
import { makeProfile } from '../../src/protocol/profile.js';
import type { DirectoryHarness } from './directory-harness.js';
import type { Reply } from './directory-flows.js';
import { serveProcess, type ServeProcess } from './serve-process.js';

const profile = makeProfile('platform');

/** A Directory harness over HTTP to `p`. */
export function overHttp(p: ServeProcess): DirectoryHarness {
  const h: Pick<DirectoryHarness, 'profile' | 'call' | 'settle'> = {
    profile,
    async call(method: string, url: string, payload?: unknown): Promise<Reply> {
      const res = await fetch(`${p.urls.directory!}${url}`, {
        method,
        ...(payload === undefined ? {} : { body: JSON.stringify(payload), headers: { 'content-type': 'application/json' } }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    settle() {
      // blocks come from the producer; callers wait for what they need to see
    },
  };
  return h as DirectoryHarness;
}

/** True when `did` resolves at `h`. */
export const resolves = async (h: DirectoryHarness, did: string): Promise<boolean> =>
  (await h.call('GET', `/resolve/${encodeURIComponent(did)}`)).status === 200;

/**
 * Starts two Directory processes on `db` (the `--db …` arguments), the second with the first's genesis and
 * attestor key as an operator copies them; each is pushed to `children` as soon as it runs.
 */
export async function twoDirectories(tempDir: () => string, children: ServeProcess[], db: readonly string[]): Promise<[ServeProcess, ServeProcess]> {
  const start = async (dataDir: string): Promise<ServeProcess> => {
    const p = await serveProcess(['--data-dir', dataDir, '--roles', 'directory', '--directory-port', '0', ...db]);
    children.push(p);
    return p;
  };
  const d1Dir = tempDir();
  const d1 = await start(d1Dir);
  const d2Dir = tempDir();
  for (const f of [GENESIS_FILE, ATTESTOR_KEY_FILE]) copyFileSync(join(d1Dir, f), join(d2Dir, f));
  return [d1, await start(d2Dir)];
}
