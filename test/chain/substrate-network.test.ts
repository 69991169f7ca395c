/**
 * Directories of several operators on one real Substrate runtime (`npm run dev-chain`: chopsticks running the
 * asset-hub runtime that ships in @substrate/connect-known-chains): each a real `ddn serve --ledger substrate`
 * process with its own data directory and chain account, all following one chain. They converge, decide a
 * conflict the same way, survive kill -9 with changes in flight, let a late Directory sync from the chain alone,
 * skip strangers' remarks, wait out an empty account and a chain that stops answering.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DirectoryClient } from '../../src/client/directory-client.js';
import type { DidDocumentJson } from '../../src/client/types.js';
import { createSubstrateClient, type SubstrateClient } from '../../src/chain/substrate-client.js';
import { utf8 } from '../../src/base/bytes.js';
import { ANCHOR_LIMITS, ANCHOR_MAGIC, encodeAnchorBatch } from '../../src/ledger/anchor-batch.js';
import { startDevChain, type DevChain } from '../support/dev-chain.js';
import { didOf, docOf, keyOf } from '../support/directory-flows.js';
import { serveProcess, serveScratch, type ServeProcess } from '../support/serve-process.js';
import { waitFor } from '../support/wait.js';
import { networkCommand } from '../../src/cli/network.js';
import type { CliIo } from '../../src/cli/io.js';

const scratch = serveScratch('ddn-substrate-');
const silent = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {} };
let chain: DevChain;
let networkFile: string;
const ACCOUNTS = 5;

/** Runs `ddn network …` in this process; its JSON result. */
async function network(args: string[]): Promise<Record<string, unknown>> {
  let out = '';
  let err = '';
  const io: CliIo = { stdout: (s) => void (out += s), stderr: (s) => void (err += s), env: {}, shutdownSignal: () => new Promise<NodeJS.Signals>(() => {}) };
  const code = await networkCommand.run(args, io);
  assert.equal(code, 0, `ddn network ${args.join(' ')}: ${out}${err}`);
  return JSON.parse(out) as Record<string, unknown>;
}

/** `ddn serve --roles directory --ledger substrate` on the chain, from account `i`. */
async function directory(i: number, dataDir = scratch.tempDir()): Promise<ServeProcess & { dataDir: string; client: DirectoryClient }> {
  const p = await serveProcess([
    '--roles',
    'directory',
    '--directory-port',
    '0',
    '--data-dir',
    dataDir,
    '--ledger',
    'substrate',
    '--chain-url',
    chain.url,
    '--chain-key',
    chain.keyFiles[i]!,
    '--network',
    networkFile,
    '--rate-limit',
    'off',
    '--log-level',
    'warn',
  ]);
  scratch.children.push(p);
  return Object.assign(p, { dataDir, client: new DirectoryClient(p.urls.directory!) });
}

type Dir = Awaited<ReturnType<typeof directory>>;

async function get(d: Dir, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${d.urls.directory}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Waits until `d` has applied the chain's finalized head (its /ready answers 200 and its lag is 0). */
async function synced(d: Dir): Promise<void> {
  await waitFor(
    `${d.urls.directory} applies the chain head`,
    async () => {
      const h = await get(d, '/health');
      const c = h.body.chain as { lag: number; awaiting: number } | undefined;
      return (await get(d, '/ready')).status === 200 && c !== undefined && c.lag === 0 && c.awaiting === 0 ? true : undefined;
    },
    { tries: 1200, everyMs: 100, ignoreErrors: true },
  );
}

async function registerVia(d: Dir, seed: number, alias?: string): Promise<string> {
  const did = didOf(seed);
  const key = keyOf(seed);
  const r = await d.client.register({ did, key, didDocument: docOf(did, key) as unknown as DidDocumentJson, ...(alias === undefined ? {} : { alias }) });
  return r.tx_hash;
}

async function finished(d: Dir, txHash: string): Promise<Record<string, unknown>> {
  return waitFor(
    `${txHash} finished at ${d.urls.directory}`,
    async () => {
      const r = await get(d, `/transactions/${txHash}`);
      return r.status === 200 && r.body.status !== 'pending' ? r.body : undefined;
    },
    { tries: 1200, everyMs: 100 },
  );
}

/** What two Directories must answer alike. */
async function snapshot(d: Dir, dids: string[], txs: string[]) {
  const latest = await get(d, '/blocks/latest');
  const n = (latest.body as { number: number }).number;
  const blocks = [];
  for (let i = 0; i <= n; i++) blocks.push((await get(d, `/blocks/${i}`)).body);
  return {
    blocks,
    resolve: await Promise.all(dids.map(async (did) => (await get(d, `/resolve/${encodeURIComponent(did)}`)).body)),
    txs: await Promise.all(txs.map(async (t) => (await get(d, `/transactions/${t}`)).body)),
    genesis: (await get(d, '/health')).body.genesis_hash,
  };
}

describe('Directories on one Substrate chain (real runtime)', { timeout: 900_000 }, () => {
  let a: Dir;
  let b: Dir;
  let raw: SubstrateClient;

  before(async () => {
    chain = await startDevChain({ accounts: ACCOUNTS });
    networkFile = join(scratch.tempDir(), 'network.json');
    const attestorDir = scratch.tempDir();
    const made = await network([
      'init',
      '--chain-url',
      chain.url,
      '--chain-key',
      chain.keyFiles[0]!,
      '--network-id',
      'ddn-test-net',
      '--data-dir',
      attestorDir,
      '--out',
      networkFile,
    ]);
    assert.equal(made.network_id, 'ddn-test-net');
    [a, b] = await Promise.all([directory(0, attestorDir), directory(1)]);
    raw = createSubstrateClient({ urls: [chain.url], keyFile: chain.keyFiles[4]!, logger: silent });
    await raw.connect(60_000);
  });

  after(async () => {
    await raw?.close();
    await chain?.stop();
  });

  it('two Directories converge: the same blocks, hashes, answers, whoever accepted a change', async () => {
    await Promise.all([synced(a), synced(b)]);
    const t1 = await registerVia(a, 1);
    const t2 = await registerVia(b, 2);
    const t3 = await registerVia(a, 3);
    for (const d of [a, b]) for (const t of [t1, t2, t3]) assert.equal((await finished(d, t)).status, 'finalized');
    await Promise.all([synced(a), synced(b)]);
    const dids = [didOf(1), didOf(2), didOf(3)];
    const [sa, sb] = await Promise.all([snapshot(a, dids, [t1, t2, t3]), snapshot(b, dids, [t1, t2, t3])]);
    assert.deepEqual(sa, sb);
    assert.ok(sa.blocks.length > 1);
    const health = (await get(a, '/health')).body;
    assert.equal(health.chain_id, 'ddn-test-net');
    assert.deepEqual(Object.keys(health.chain as object).sort(), ['account', 'applied', 'awaiting', 'connected', 'finalized', 'lag', 'network_id']);
  });

  it('a conflicting alias claimed through both is won by exactly one DID, on both', async () => {
    const [ta, tb] = await Promise.all([registerVia(a, 11, 'contested'), registerVia(b, 12, 'contested')]);
    for (const d of [a, b]) for (const t of [ta, tb]) await finished(d, t);
    await Promise.all([synced(a), synced(b)]);
    const owners = await Promise.all([a, b].map(async (d) => (await get(d, '/aliases/contested')).body.did));
    assert.ok(owners[0] === didOf(11) || owners[0] === didOf(12), JSON.stringify(owners));
    assert.equal(owners[0], owners[1], 'both Directories name the same owner');
    const loser = owners[0] === didOf(11) ? didOf(12) : didOf(11);
    for (const d of [a, b]) assert.deepEqual((await get(d, `/resolve/${encodeURIComponent(loser)}`)).body.aliases ?? [], []);
  });

  it("skips strangers' garbage and oversized ddn remarks, and follows on", async () => {
    const before = await get(a, '/blocks/latest');
    const items = Array.from({ length: 3 }, () => ({ submittedAtMs: 1, meta: { subject: 'x', action: 'y', limitKey: 'z' }, bytes: Uint8Array.of(8, 99) }));
    for (const data of [
      utf8('not ours'),
      Uint8Array.of(...ANCHOR_MAGIC, 0xff, 0xfe, 0xfd),
      encodeAnchorBatch({ networkId: 'ddn-test-net', items }), // decodes, but no valid extrinsic in it
      Uint8Array.of(...encodeAnchorBatch({ networkId: 'ddn-test-net', items: [] }), 1, 2, 3), // trailing bytes
      // tagged, with an extrinsic beyond a batch item's bound
      encodeAnchorBatch({ networkId: 'ddn-test-net', items: [{ ...items[0]!, bytes: new Uint8Array(ANCHOR_LIMITS.maxExtrinsicBytes + 1) }] }),
      new Uint8Array(raw.info().maxRemarkBytes - 16).fill(7), // the largest the chain takes: garbage with no tag
    ]) {
      await raw.submitRemark(data);
    }
    const t = await registerVia(b, 21);
    for (const d of [a, b]) assert.equal((await finished(d, t)).status, 'finalized');
    await Promise.all([synced(a), synced(b)]);
    const [la, lb] = await Promise.all([get(a, '/blocks/latest'), get(b, '/blocks/latest')]);
    assert.deepEqual(la.body, lb.body);
    assert.equal((la.body as { number: number }).number, (before.body as { number: number }).number + 1, 'garbage made no ddn block');
  });

  it('kill -9 with changes in flight, then restart: every 202 ends finalized, none applied twice', async () => {
    const txs = await Promise.all([40, 41, 42, 43, 44].map((s) => registerVia(a, s)));
    a.proc.kill('SIGKILL');
    await a.exited;
    a = await directory(0, a.dataDir);
    for (const t of txs) assert.equal((await finished(a, t)).status, 'finalized');
    await Promise.all([synced(a), synced(b)]);
    const n = ((await get(a, '/blocks/latest')).body as { number: number }).number;
    const seen: string[] = [];
    for (let i = 1; i <= n; i++) {
      const blk = (await get(a, `/blocks/${i}`)).body as { extrinsics?: { tx_hash: string }[]; transactions?: { tx_hash: string }[] };
      for (const x of blk.extrinsics ?? blk.transactions ?? []) seen.push(x.tx_hash);
    }
    for (const t of txs) assert.equal(seen.filter((h) => h === t).length, 1, `${t} is in exactly one block`);
    const dids = [40, 41, 42, 43, 44].map((s) => didOf(s));
    assert.deepEqual(await snapshot(a, dids, txs), await snapshot(b, dids, txs));
  });

  it('an account out of funds: 202 kept, an error metric, finalized once funded', async () => {
    await chain.setBalance(chain.accounts[1]!, 0n);
    const t = await registerVia(b, 51);
    await waitFor(
      'the refusal is counted',
      async () => {
        const m = await (await fetch(`${b.urls.directory}/metrics`)).text();
        return /ddn_chain_submission_failures_total\{reason="insufficient_funds"\} [1-9]/.test(m) ? true : undefined;
      },
      { tries: 600, everyMs: 100 },
    );
    assert.equal((await get(b, `/transactions/${t}`)).body.status, 'pending');
    await chain.setBalance(chain.accounts[1]!, 10n ** 18n);
    assert.equal((await finished(b, t)).status, 'finalized');
    assert.equal((await finished(a, t)).status, 'finalized');
  });

  it('a third Directory started later syncs from the chain alone', async () => {
    const c = await directory(2);
    await Promise.all([synced(a), synced(c)]);
    const dids = [1, 2, 3, 11, 12, 21, 40, 51].map((s) => didOf(s));
    assert.deepEqual(await snapshot(c, dids, []), await snapshot(a, dids, []));
  });

  it('the chain stops answering: writes 503 chain_unavailable, reads work, health degraded; it comes back and writes flow', async () => {
    chain.pause();
    try {
      await waitFor(
        'the Directory notices',
        async () => {
          const r = await fetch(`${a.urls.directory}/health`);
          const h = (await r.json()) as { status: string; chain?: { connected: boolean } };
          return h.status === 'degraded' && h.chain?.connected === false ? true : undefined;
        },
        { tries: 600, everyMs: 100 },
      );
      const did = didOf(61);
      const key = keyOf(61);
      await assert.rejects(
        a.client.register({ did, key, didDocument: docOf(did, key) as unknown as DidDocumentJson }),
        (e: unknown) => (e as { status?: number; code?: string }).status === 503 && (e as { code?: string }).code === 'chain_unavailable',
      );
      assert.equal((await get(a, `/resolve/${encodeURIComponent(didOf(1))}`)).status, 200, 'reads keep working');
      assert.equal((await get(a, '/ready')).status, 503);
    } finally {
      chain.resume();
    }
    await synced(a);
    const t = await registerVia(a, 61);
    assert.equal((await finished(a, t)).status, 'finalized');
  });

  it("without --network: the chain's default network, from block 0, for a development chain", async () => {
    const dataDir = scratch.tempDir();
    const args = ['--roles', 'directory', '--directory-port', '0', '--data-dir', dataDir, '--ledger', 'substrate', '--chain-url', chain.url];
    const p = await serveProcess([...args, '--chain-key', chain.keyFiles[3]!, '--rate-limit', 'off']);
    scratch.children.push(p);
    const d = Object.assign(p, { dataDir, client: new DirectoryClient(p.urls.directory!) });
    await synced(d);
    const t = await registerVia(d, 71);
    assert.equal((await finished(d, t)).status, 'finalized');
    const h = (await get(d, '/health')).body;
    assert.equal(h.chain_id, 'ddn-dev');
    assert.notEqual(h.genesis_hash, (await get(b, '/health')).body.genesis_hash, "another network than the file's");
    assert.equal((await get(b, `/resolve/${encodeURIComponent(didOf(71))}`)).status, 404, "the file's network does not see it");
  });

  it('refuses a data directory that follows another network, at start', async () => {
    const other = join(scratch.tempDir(), 'other.json');
    const text = JSON.stringify({ ...JSON.parse((await import('node:fs')).readFileSync(networkFile, 'utf8')), network_id: 'another-net' });
    writeFileSync(other, text);
    const args = ['--roles', 'directory', '--directory-port', '0', '--data-dir', a.dataDir, '--ledger', 'substrate', '--chain-url', chain.url];
    a.proc.kill('SIGKILL');
    await a.exited;
    await assert.rejects(serveProcess([...args, '--chain-key', chain.keyFiles[0]!, '--network', other]), /genesis differs/);
  });
});
