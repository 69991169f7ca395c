/**
 * The ChainClient over @polkadot/api: failover across the `--chain-url` endpoints, retried with back-off for ever;
 * the finalized-head subscription renewed on every connection; blocks read as header, `timestamp.now` and the
 * successful top-level remarks; remarks submitted one at a time as `system.remark_with_event` and answered once
 * finalized.
 *
 * Endpoints must serve one chain: an endpoint whose genesis differs from the first one connected is refused (logged,
 * the next is tried).
 */
import '@polkadot/api-augment';
import type { ApiPromise } from '@polkadot/api';
import type { SubmittableExtrinsic } from '@polkadot/api/types';
import type { EventRecord, ExtrinsicStatus, Hash } from '@polkadot/types/interfaces';
import { u8aToHex } from '@polkadot/util';
import { encodeAddress } from '@polkadot/util-crypto';
import type { BaseLogger } from 'pino';
import { backoffDelay, realRetryTiming, type Backoff } from '../base/retry.js';
import { SerialQueue } from '../base/serial-queue.js';
import { loadChainKey, SS58_PREFIX, type ChainKey } from './chain-key.js';
import { submitErrorOf } from './chain-errors.js';
import { ChainError, type ChainBlock, type ChainClient, type ChainInfo, type RemarkIncluded } from './chain-port.js';
import { remarksOf, type ExtrinsicView } from './remarks.js';
import { openSession, type MetadataCache, type Session } from './substrate-session.js';

export type ChainLogger = Pick<BaseLogger, 'error' | 'warn' | 'info' | 'debug'>;

export interface SubstrateClientOptions {
  /** WebSocket endpoints of one chain, tried in order (`--chain-url`, repeatable). */
  urls: readonly string[];
  /** The account's key, or the key file to load it from at connect. */
  key?: ChainKey;
  keyFile?: string;
  logger: ChainLogger;
  /** Pause between rounds of failed connection attempts (default 250 ms doubling to 10 s). */
  backoff?: Backoff;
  /** How long one endpoint may take to connect and load (default 15 s). */
  openTimeoutMs?: number;
  /** How long one RPC call may take (default 30 s). */
  requestTimeoutMs?: number;
  /** An endpoint that leaves a liveness probe unanswered this long is dropped and the next tried (default 10 s). */
  livenessMs?: number;
}

/** Room left in a block for the extrinsic's envelope and the block's inherents (parachain validation data). */
const BLOCK_ROOM = 64 * 1024;

export interface SubstrateClient extends ChainClient {
  /** The URL of the connected endpoint, if any. */
  readonly url: string | null;
}

/** Builds the client; nothing is opened before {@link ChainClient.connect}. */
export function createSubstrateClient(o: SubstrateClientOptions): SubstrateClient {
  if (o.urls.length === 0) throw new Error('createSubstrateClient: at least one URL');
  if ((o.key === undefined) === (o.keyFile === undefined)) throw new Error('createSubstrateClient: key or keyFile, exactly one');
  return new Client(o);
}

class Client implements SubstrateClient {
  private key: ChainKey | undefined;
  private session: Session | undefined;
  private facts: ChainInfo | undefined;
  private readonly metadata: MetadataCache = {};
  private readonly submissions = new SerialQueue();
  private readonly finalizedListeners = new Set<(n: number) => void>();
  private readonly connectionListeners = new Set<(connected: boolean, url: string | null) => void>();
  private readonly waiters = new Set<() => void>();
  private lastFinalized = -1;
  private loop: Promise<void> | undefined;
  private closed = false;
  private readonly stop = new AbortController();
  private next = 0;

  constructor(private readonly o: SubstrateClientOptions) {
    this.key = o.key;
  }

  get connected(): boolean {
    return this.session !== undefined;
  }

  get url(): string | null {
    return this.session?.url ?? null;
  }

  async connect(timeoutMs: number): Promise<void> {
    if (this.closed) throw new ChainError('unavailable', 'the chain client is closed');
    this.key ??= await loadChainKey(this.o.keyFile!);
    this.loop ??= this.run();
    if (this.session !== undefined) return;
    let timer: NodeJS.Timeout | undefined;
    let wake: (() => void) | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        wake = resolve;
        this.waiters.add(resolve);
        timer = setTimeout(() => reject(new ChainError('unavailable', `no chain endpoint answered in ${timeoutMs} ms (${this.o.urls.join(', ')})`)), timeoutMs);
      });
    } finally {
      clearTimeout(timer);
      if (wake !== undefined) this.waiters.delete(wake);
    }
    if (this.session === undefined) throw new ChainError('unavailable', 'the chain client is closed');
  }

  info(): ChainInfo {
    if (this.facts === undefined) throw new ChainError('unavailable', 'not connected to the chain yet');
    return this.facts;
  }

  async finalizedNumber(): Promise<number> {
    const api = this.api();
    const head = await api.rpc.chain.getFinalizedHead();
    const n = (await api.rpc.chain.getHeader(head)).number.toNumber();
    this.lastFinalized = Math.max(this.lastFinalized, n);
    return n;
  }

  async block(number: number): Promise<ChainBlock> {
    const api = this.api();
    if (number > this.lastFinalized && number > (await this.finalizedNumber())) throw new RangeError(`block ${number} is not finalized yet`);
    const hash = await api.rpc.chain.getBlockHash(number);
    const [signed, events, now] = await Promise.all([api.rpc.chain.getBlock(hash), api.query.system.events.at(hash), api.query.timestamp.now.at(hash)]);
    const header = signed.block.header;
    if (header.number.toNumber() !== number) throw new ChainError('unavailable', `the endpoint has no block ${number}`);
    const views: ExtrinsicView[] = signed.block.extrinsics.map((ex) => ({
      section: ex.method.section,
      method: ex.method.method,
      signer: ex.isSigned ? signerOf(ex.signer) : undefined,
      data: () => (ex.method.args[0] as { toU8a(bare: boolean): Uint8Array }).toU8a(true),
    }));
    return {
      number,
      hash: hash.toHex(),
      parentHash: header.parentHash.toHex(),
      timestampMs: now.toNumber(),
      remarks: remarksOf(views, succeededIndexes(api, events)),
    };
  }

  onFinalized(listener: (number: number) => void): () => void {
    this.finalizedListeners.add(listener);
    return () => this.finalizedListeners.delete(listener);
  }

  onConnection(listener: (connected: boolean, url: string | null) => void): () => void {
    this.connectionListeners.add(listener);
    return () => this.connectionListeners.delete(listener);
  }

  submitRemark(data: Uint8Array): Promise<RemarkIncluded> {
    return this.submissions.run(() => this.submitOne(data));
  }

  async balance(): Promise<bigint> {
    const account = await this.api().query.system.account(this.account());
    return account.data.free.toBigInt();
  }

  async estimateFee(bytes: number): Promise<bigint> {
    const info = await this.remarkTx(this.api(), new Uint8Array(bytes)).paymentInfo(this.account());
    return info.partialFee.toBigInt();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stop.abort();
    this.session?.end();
    for (const w of this.waiters) w();
    await this.loop;
  }

  // ---- connection loop ----

  private async run(): Promise<void> {
    let failedRounds = 0;
    let failedInRound = 0;
    while (!this.closed) {
      const url = this.o.urls[this.next % this.o.urls.length]!;
      this.next = (this.next + 1) % this.o.urls.length;
      const session = await this.open(url);
      if (session === undefined) {
        failedInRound++;
        if (failedInRound >= this.o.urls.length) {
          failedInRound = 0;
          failedRounds++;
          const ms = backoffDelay(this.o.backoff ?? { firstMs: 250, maxMs: 10_000, jitter: true }, failedRounds);
          await realRetryTiming.sleep(ms, this.stop.signal).catch(() => undefined);
        }
        continue;
      }
      failedRounds = 0;
      failedInRound = 0;
      await this.serve(session);
      if (this.closed) return;
      this.next = (this.o.urls.indexOf(url) + 1) % this.o.urls.length;
      this.o.logger.warn({ chain_url: url }, 'chain endpoint lost; trying the next');
      this.emitConnection(false, null);
    }
  }

  private async open(url: string): Promise<Session | undefined> {
    let session: Session;
    try {
      session = await openSession(url, this.o.openTimeoutMs ?? 15_000, this.o.requestTimeoutMs ?? 30_000, this.metadata);
    } catch (err) {
      this.o.logger.debug({ chain_url: url, err: (err as Error).message }, 'chain endpoint did not connect');
      return undefined;
    }
    const genesisHash = session.api.genesisHash.toHex();
    if (this.facts !== undefined && this.facts.genesisHash !== genesisHash) {
      this.o.logger.error({ chain_url: url, genesis_hash: genesisHash, expected: this.facts.genesisHash }, 'chain endpoint serves another chain; skipped');
      session.end();
      return undefined;
    }
    if (this.closed) {
      session.end();
      return undefined;
    }
    return session;
  }

  /** Holds `session` as the current one until it ends. */
  private async serve(session: Session): Promise<void> {
    const api = session.api;
    this.facts ??= factsOf(api, this.account());
    this.session = session;
    this.o.logger.info({ chain_url: session.url, genesis_hash: this.facts.genesisHash }, 'connected to the chain');
    this.emitConnection(true, session.url);
    for (const w of this.waiters) w();
    // the subscription ends with the connection (its unsubscribe is moot then, and may never settle)
    api.rpc.chain
      .subscribeFinalizedHeads((header) => this.advance(header.number.toNumber()))
      .catch((err: unknown) => {
        this.o.logger.warn({ chain_url: session.url, err: (err as Error).message }, 'finalized-head subscription failed');
        session.end();
      });
    const liveness = this.o.livenessMs ?? 10_000;
    const probe = setInterval(() => {
      const t = setTimeout(() => {
        this.o.logger.warn({ chain_url: session.url, ms: liveness }, 'chain endpoint stopped answering');
        session.end();
      }, liveness);
      // any answer, an error included, shows the endpoint is alive; a dropped connection ends the session anyway
      api.rpc.system.health().then(
        () => clearTimeout(t),
        () => clearTimeout(t),
      );
    }, liveness / 2);
    await session.ended;
    clearInterval(probe);
    this.session = undefined;
  }

  private advance(n: number): void {
    if (n <= this.lastFinalized) return;
    this.lastFinalized = n;
    for (const l of this.finalizedListeners) {
      try {
        l(n);
      } catch (err) {
        this.o.logger.error({ err: (err as Error).message }, 'finalized-head listener threw');
      }
    }
  }

  private emitConnection(connected: boolean, url: string | null): void {
    for (const l of this.connectionListeners) {
      try {
        l(connected, url);
      } catch (err) {
        this.o.logger.error({ err: (err as Error).message }, 'connection listener threw');
      }
    }
  }

  // ---- submission ----

  private api(): ApiPromise {
    if (this.session === undefined) throw new ChainError('unavailable', 'not connected to the chain');
    return this.session.api;
  }

  private account(): string {
    return this.key!.address;
  }

  /** The call with `data` passed as hex: @polkadot/api takes a Uint8Array argument for `Bytes` as already SCALE-encoded. */
  private remarkTx(api: ApiPromise, data: Uint8Array): SubmittableExtrinsic<'promise'> {
    const hex = u8aToHex(data);
    return api.tx.system.remarkWithEvent !== undefined ? api.tx.system.remarkWithEvent(hex) : api.tx.system.remark(hex);
  }

  private async submitOne(data: Uint8Array): Promise<RemarkIncluded> {
    const session = this.session;
    if (session === undefined) throw new ChainError('unavailable', 'not connected to the chain');
    const { api } = session;
    const max = this.info().maxRemarkBytes;
    if (data.length > max) throw new ChainError('too_large', `a remark of ${data.length} bytes exceeds the chain's ${max}`);
    const key = this.key!;
    const nonce = await api.rpc.system.accountNextIndex(key.address);
    const tx = await this.remarkTx(api, data).signAsync(key.pair, { nonce });
    const finalizedIn = await new Promise<Hash>((resolve, reject) => {
      let unsubscribe: (() => void) | undefined;
      let settled = false;
      const settle = (f: () => void): void => {
        if (settled) return;
        settled = true;
        unsubscribe?.();
        f();
      };
      // `ended` never rejects; it only settles this promise when the connection goes first.
      void session.ended.then(() =>
        settle(() => reject(new ChainError('unavailable', 'the chain connection dropped before the remark was finalized (it may still be included)'))),
      );
      api.rpc.author
        .submitAndWatchExtrinsic(tx, (status: ExtrinsicStatus) => {
          if (status.isFinalized) settle(() => resolve(status.asFinalized));
          else if (status.isInvalid || status.isDropped || status.isUsurped || status.isFinalityTimeout)
            settle(() => reject(new ChainError('rejected', `the chain ${status.type.toLowerCase()} the remark`)));
        })
        .then(
          (u) => {
            if (settled) u();
            else unsubscribe = u;
          },
          (err: unknown) => settle(() => reject(submitErrorOf((err as Error).message))),
        );
    });
    return this.outcome(api, tx.hash.toHex(), finalizedIn);
  }

  /** The fee and the dispatch result of extrinsic `txHash` in the finalized block `blockHash`. */
  private async outcome(api: ApiPromise, txHash: string, blockHash: Hash): Promise<RemarkIncluded> {
    const [signed, events] = await Promise.all([api.rpc.chain.getBlock(blockHash), api.query.system.events.at(blockHash)]);
    const index = signed.block.extrinsics.findIndex((ex) => ex.hash.toHex() === txHash);
    if (index < 0) throw new ChainError('rejected', `the remark is not in the block ${blockHash.toHex()} it was reported in`);
    const own = events.filter((e) => e.phase.isApplyExtrinsic && e.phase.asApplyExtrinsic.toNumber() === index);
    const failed = own.find((e) => api.events.system.ExtrinsicFailed.is(e.event));
    if (failed !== undefined) throw new ChainError('rejected', `the remark failed to dispatch: ${failed.event.data[0]!.toString()}`);
    return {
      blockNumber: signed.block.header.number.toNumber(),
      blockHash: blockHash.toHex(),
      fee: feeOf(api, own, this.account()),
    };
  }
}

/** The signer in SS58 (prefix 42); a signer given otherwise than by account id (an index) as the chain prints it. */
function signerOf(address: { toString(): string; isId?: boolean; asId?: Uint8Array }): string {
  if (address.isId === true && address.asId !== undefined) return encodeAddress(address.asId, SS58_PREFIX);
  try {
    return encodeAddress(address.toString(), SS58_PREFIX);
  } catch {
    return address.toString();
  }
}

function succeededIndexes(api: ApiPromise, events: readonly EventRecord[]): Set<number> {
  const ok = new Set<number>();
  for (const e of events) if (e.phase.isApplyExtrinsic && api.events.system.ExtrinsicSuccess.is(e.event)) ok.add(e.phase.asApplyExtrinsic.toNumber());
  return ok;
}

/** `TransactionFeePaid` where the runtime has it, else what the account paid in `Withdraw` less refunds (`Deposit`). */
function feeOf(api: ApiPromise, events: readonly EventRecord[], account: string): bigint {
  const mine = (who: { toString(): string }): boolean => encodeAddress(who.toString(), SS58_PREFIX) === account;
  const paid = events.find((e) => api.events.transactionPayment?.TransactionFeePaid?.is(e.event));
  if (paid !== undefined && api.events.transactionPayment.TransactionFeePaid.is(paid.event)) return paid.event.data.actualFee.toBigInt();
  let fee = 0n;
  for (const { event } of events) {
    if (api.events.balances.Withdraw.is(event) && mine(event.data[0])) fee += event.data[1].toBigInt();
    if (api.events.balances.Deposit.is(event) && mine(event.data[0])) fee -= event.data[1].toBigInt();
  }
  return fee;
}

function factsOf(api: ApiPromise, account: string): ChainInfo {
  const normal = api.consts.system.blockLength.max.normal.toNumber();
  return {
    genesisHash: api.genesisHash.toHex(),
    specName: api.runtimeVersion.specName.toString(),
    tokenSymbol: api.registry.chainTokens[0] ?? '',
    tokenDecimals: api.registry.chainDecimals[0] ?? 0,
    account,
    maxRemarkBytes: normal - BLOCK_ROOM,
  };
}
