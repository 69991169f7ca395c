/**
 * Floor references (`references/floor-server.ts`), measured beside the figures they bound: the same load job
 * against a server that does only the work the protocol cannot skip.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keyPairFromPrivateKey, keyPairFromSeed } from '../src/crypto/ed25519.js';
import { toHex } from '../src/base/bytes.js';
import type { BenchContext, Floor } from './context.js';
import type { LoadJob } from './jobs.js';
import { startPortServer, type PortServer } from './references.js';

const FLOOR = fileURLToPath(new URL('./references/floor-server.ts', import.meta.url));

export type FloorKind = 'store' | 'retrieval' | 'relay';

const WHAT: Record<FloorKind, string> = {
  store: 'node:http + JSON.parse + one group-committed SQLite insert (WAL, FULL) per request',
  retrieval: 'node:http + the proof text + one Ed25519 verification (a verifier thread, batched per turn) + one group-committed nonce insert per request',
  relay: 'two node:http processes: parse, Ed25519 sign (libsodium), keep-alive POST; the other verifies (libsodium), parses and inserts (group commit, FULL)',
};

const floorServer = (mode: string, dir: string, config: object = {}, env: NodeJS.ProcessEnv = process.env) =>
  startPortServer(['--import', 'tsx', FLOOR, mode, dir, JSON.stringify(config)], env);

/**
 * Runs `job` (its URL replaced) against the floor of `kind`, with the CPU of the floor's processes counted; the
 * servers and their data are gone afterwards.
 */
export async function measureFloor(ctx: BenchContext, kind: FloorKind, job: LoadJob): Promise<Floor> {
  const dir = mkdtempSync(join(tmpdir(), 'ddn-floor-'));
  const servers: PortServer[] = [];
  try {
    let front: PortServer;
    if (kind === 'relay') {
      const { privateKey } = generateKeyPairSync('ed25519');
      const back = await floorServer('store-signed', dir, { signerKeyHex: toHex(keyPairFromPrivateKey(privateKey).publicKey) });
      servers.push(back);
      const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
      front = await floorServer('relay', dir, { next: `${back.url}/store` }, { ...process.env, DDN_FLOOR_KEY: pem });
    } else if (kind === 'retrieval') {
      const r = ctx.recipients.retrieval;
      const publicKeyHex = toHex(keyPairFromSeed(Buffer.from(r.seedHex, 'hex')).publicKey);
      front = await floorServer('retrieval', dir, { profile: ctx.profile, did: r.did, publicKeyHex });
    } else {
      front = await floorServer('store', dir);
    }
    servers.unshift(front);
    const load = await ctx.load(
      { ...job, name: `floor: ${job.name}`, url: front.url },
      servers.map((s) => s.pid),
    );
    return { rate: load.rate, what: WHAT[kind], load };
  } finally {
    for (const s of servers) s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
