/**
 * The Substrate client against the real runtime of the dev chain (chopsticks, rococo asset hub): remarks read back
 * byte-exact, submissions finalized one at a time, typed refusals, failover, reconnects and a stalled chain.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { loadChainKey } from '../../src/chain/chain-key.js';
import { ChainError, type ChainClient } from '../../src/chain/chain-port.js';
import { createSubstrateClient, type SubstrateClient, type SubstrateClientOptions } from '../../src/chain/substrate-client.js';
import { openSession } from '../../src/chain/substrate-session.js';
import { startDevChain, type DevChain } from '../support/dev-chain.js';
import { tcpProxy } from '../support/tcp-proxy.js';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';

const logger = pino({ level: process.env.CHAIN_TEST_LOG ?? 'silent' }, pino.destination({ fd: 2, sync: true }));
let chain: DevChain;
const clients: ChainClient[] = [];

function client(o: Partial<SubstrateClientOptions> & { account?: number } = {}): SubstrateClient {
  const c = createSubstrateClient({
    urls: [chain.url],
    keyFile: chain.keyFiles[o.account ?? 0],
    logger,
    backoff: { firstMs: 50, maxMs: 500 },
    ...o,
  });
  clients.push(c);
  return c;
}

/** Resolves with the first value `register`'s listener is called with that satisfies `ok`. */
function next<T extends unknown[]>(register: (l: (...a: T) => void) => () => void, ok: (...a: T) => boolean): Promise<T> {
  return new Promise((resolve) => {
    const off = register((...a) => {
      if (!ok(...a)) return;
      off();
      resolve(a);
    });
  });
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

const bytes = (n: number, seed: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) % 256);

async function refusal(p: Promise<unknown>): Promise<ChainError> {
  const err = await p.then(
    () => assert.fail('resolved'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ChainError, String(err));
  return err;
}

before(async () => {
  chain = await startDevChain({ accounts: 3 });
});
after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  assert.equal(await chain.stop(), 0);
});

describe('the Substrate client on the dev chain', () => {
  let c: SubstrateClient;
  before(async () => {
    c = client();
    await c.connect(60_000);
  });

  it('connects and tells the chain and the account', () => {
    assert.equal(c.connected, true);
    assert.equal(c.url, chain.url);
    assert.deepEqual(c.info(), {
      genesisHash: chain.genesisHash,
      specName: 'statemine',
      tokenSymbol: 'ROC',
      tokenDecimals: 12,
      account: chain.accounts[0],
      maxRemarkBytes: 3_932_160 - 65_536,
    });
    assert.match(chain.genesisHash, /^0x(45){32}$/);
  });

  it('posts a 2 KiB and a 100-byte remark and reads both back byte for byte', async () => {
    for (const data of [bytes(2048, 1), bytes(100, 2)]) {
      const included = await c.submitRemark(data);
      assert.ok(included.fee > 0n);
      const block = await c.block(included.blockNumber);
      assert.equal(block.hash, included.blockHash);
      assert.equal(block.parentHash, (await c.block(included.blockNumber - 1)).hash);
      assert.ok(block.timestampMs > 0);
      const mine = block.remarks.filter((r) => r.signer === chain.accounts[0]);
      assert.equal(mine.length, 1);
      assert.deepEqual(mine[0]!.data, data);
    }
  });

  it('serialises submissions: several at once are all finalized, in order', async () => {
    const data = [1, 2, 3, 4, 5].map((i) => bytes(64 + i, i));
    const included = await Promise.all(data.map((d) => c.submitRemark(d)));
    const numbers = included.map((r) => r.blockNumber);
    assert.deepEqual(
      numbers,
      [...numbers].sort((a, b) => a - b),
    );
    assert.equal(new Set(numbers).size, numbers.length);
    for (const [i, r] of included.entries()) {
      const remarks = (await c.block(r.blockNumber)).remarks;
      assert.deepEqual(
        remarks.map((x) => x.data),
        [data[i]],
      );
    }
    assert.ok((await c.finalizedNumber()) >= numbers.at(-1)!);
  });

  it('tells finalized heads as they advance', async () => {
    const before = await c.finalizedNumber();
    const first = next<[number]>(
      (l) => c.onFinalized(l),
      () => true,
    );
    const included = await c.submitRemark(bytes(10, 9));
    const [n] = await first;
    assert.ok(n > before && n <= included.blockNumber, `${before} < ${n} <= ${included.blockNumber}`);
  });

  it('reads remarks of other accounts and leaves failed extrinsics out', async () => {
    const other = client({ account: 1 });
    await other.connect(60_000);
    const theirs = await other.submitRemark(bytes(300, 7));
    const block = await c.block(theirs.blockNumber);
    assert.deepEqual(
      block.remarks.map((r) => [r.signer, r.data.length]),
      [[chain.accounts[1], 300]],
    );
    // a transfer of more than the account holds is included and fails
    const key = await loadChainKey(chain.keyFiles[1]!);
    const { api, end } = await openSession(chain.url, 60_000, 30_000, {});
    try {
      const failedIn = await new Promise<string>((resolve, reject) => {
        api.tx.balances
          .transfer(chain.accounts[2]!, 10n ** 30n)
          .signAndSend(key.pair, (r) => {
            if (r.status.isFinalized) resolve(r.status.asFinalized.toHex());
            if (r.isError) reject(new Error(r.status.type));
          })
          .catch(reject);
      });
      const events = await api.query.system.events.at(failedIn);
      assert.ok(events.some((e) => api.events.system.ExtrinsicFailed.is(e.event)));
      const n = (await api.rpc.chain.getHeader(failedIn)).number.toNumber();
      assert.deepEqual((await c.block(n)).remarks, []);
    } finally {
      end();
    }
  });

  it('tells the balance and positive fees growing with size', async () => {
    assert.ok((await c.balance()) > 10n ** 17n);
    const fees = await Promise.all([0, 1024, 16 * 1024, c.info().maxRemarkBytes].map((n) => c.estimateFee(n)));
    for (let i = 1; i < fees.length; i++) assert.ok(fees[i]! > fees[i - 1]!, `fees ${fees.join(' ')}`);
    assert.ok(fees[0]! > 0n);
  });

  it('refuses a remark larger than the chain takes, before submitting', async () => {
    const head = await c.finalizedNumber();
    const err = await refusal(c.submitRemark(new Uint8Array(c.info().maxRemarkBytes + 1)));
    assert.equal(err.kind, 'too_large');
    assert.equal(await c.finalizedNumber(), head);
  });

  it('posts a remark of the largest size and reads it back byte for byte', async () => {
    const data = bytes(c.info().maxRemarkBytes, 5);
    const included = await c.submitRemark(data);
    const [remark] = (await c.block(included.blockNumber)).remarks;
    assert.equal(remark!.data.length, data.length);
    assert.ok(Buffer.from(remark!.data).equals(Buffer.from(data)));
  });

  it("refuses with 'insufficient_funds' when the account cannot pay, and submits nothing", async () => {
    const poor = client({ account: 2 });
    await poor.connect(60_000);
    await chain.setBalance(chain.accounts[2]!, 0n);
    assert.equal(await poor.balance(), 0n);
    const head = await poor.finalizedNumber();
    const err = await refusal(poor.submitRemark(bytes(100, 3)));
    assert.equal(err.kind, 'insufficient_funds');
    assert.match(err.message, /cannot pay the fee/);
    assert.equal(await poor.finalizedNumber(), head);
    await chain.setBalance(chain.accounts[2]!, 10n ** 15n);
    assert.ok((await poor.submitRemark(bytes(100, 3))).blockNumber > head);
  });
});

describe('connections', () => {
  it('fails over from a dead endpoint to the next one', async () => {
    const dead = `ws://127.0.0.1:${await closedPort()}`;
    const c = client({ urls: [dead, chain.url] });
    const told = next<[boolean, string | null]>(
      (l) => c.onConnection(l),
      (up) => up,
    );
    await c.connect(60_000);
    assert.deepEqual(await told, [true, chain.url]);
    assert.equal(c.url, chain.url);
  });

  it("rejects connect with 'unavailable' when no endpoint answers in time", async () => {
    const c = client({ urls: [`ws://127.0.0.1:${await closedPort()}`] });
    const err = await refusal(c.connect(300));
    assert.equal(err.kind, 'unavailable');
    assert.equal(c.connected, false);
    assert.equal((await refusal(c.submitRemark(bytes(1, 1)))).kind, 'unavailable');
  });

  it('reconnects when the endpoint drops and comes back, and keeps following', async () => {
    const proxy = await tcpProxy(chain.port);
    const url = `ws://127.0.0.1:${proxy.port}`;
    try {
      const c = client({ urls: [url] });
      await c.connect(60_000);
      const down = next<[boolean, string | null]>(
        (l) => c.onConnection(l),
        (up) => !up,
      );
      await proxy.cut();
      assert.deepEqual(await down, [false, null]);
      assert.equal(c.connected, false);
      assert.equal((await refusal(c.finalizedNumber())).kind, 'unavailable');
      const up = next<[boolean, string | null]>(
        (l) => c.onConnection(l),
        (u) => u,
      );
      await proxy.restore();
      assert.deepEqual(await up, [true, url]);
      const included = await c.submitRemark(bytes(50, 4));
      assert.deepEqual(
        (await c.block(included.blockNumber)).remarks.map((r) => r.data),
        [bytes(50, 4)],
      );
    } finally {
      await proxy.close();
    }
  });

  it('drops a stalled endpoint and comes back when it answers again', async () => {
    const c = client({ livenessMs: 1000, openTimeoutMs: 3000 });
    await c.connect(60_000);
    const down = next<[boolean, string | null]>(
      (l) => c.onConnection(l),
      (up) => !up,
    );
    chain.pause();
    try {
      assert.deepEqual(await down, [false, null]);
    } finally {
      chain.resume();
    }
    const up = next<[boolean, string | null]>(
      (l) => c.onConnection(l),
      (u) => u,
    );
    assert.deepEqual(await up, [true, chain.url]);
    assert.ok((await c.submitRemark(bytes(20, 6))).blockNumber > 0);
  });
});
