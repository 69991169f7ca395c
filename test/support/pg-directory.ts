/** A Directory served over one "process" of a PostgreSQL ledger deployment ({@link pgLedgerDeployment}). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keyPairFromSeed } from '../../src/crypto/ed25519.js';
import { registerDirectoryRoutes } from '../../src/directory/routes.js';
import { DirectoryService } from '../../src/directory/service.js';
import { createHttpServer } from '../../src/http/server.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { SqliteDnsChallengeStore } from '../../src/store/sqlite/dns-challenge-store.js';
import { injectCall, type DirectoryHarness } from './directory-harness.js';
import type { PgLedgerProcess } from './pg-ledger.js';

/** A Directory over one process of the deployment (its `settle` is a no-op: the test produces blocks itself). */
export async function directoryOn(proc: PgLedgerProcess, clock: DirectoryHarness['clock']): Promise<DirectoryHarness> {
  const server = createHttpServer({ name: 'directory', logger: false, bodyLimitBytes: 1_048_576, tooLargeCode: 'payload_too_large' });
  const attestor = keyPairFromSeed(new Uint8Array(32).fill(9));
  const service = new DirectoryService({ ledger: proc.ledger, profile: PLATFORM, clock, attestor, challenges: SqliteDnsChallengeStore.inMemory() });
  registerDirectoryRoutes(server, service);
  await server.fastify.ready();
  const dir = mkdtempSync(join(tmpdir(), 'ddn-pg-dir-'));
  return {
    dir,
    clock,
    profile: PLATFORM,
    ledger: proc.ledger,
    server,
    service,
    attestor,
    call: injectCall(server),
    settle() {},
    async close() {
      await server.fastify.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
