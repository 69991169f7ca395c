/**
 * An in-memory chain behind the real ChainClient interface (src/chain/chain-port.ts), for the ledger-side tests
 * of `--ledger substrate` that need exact control (a stranger's remarks, a stalled or vanished chain, an empty
 * account). The real runtime's tests use the dev chain (test/support/dev-chain.ts).
 */
import { createHash } from 'node:crypto';
import { ChainError, type ChainBlock, type ChainClient, type ChainInfo, type RemarkIncluded } from '../../src/chain/chain-port.js';

const GENESIS = `0x${'45'.repeat(32)}`;
const hashOf = (parent: string, n: number, salt: string) => `0x${createHash('sha256').update(`${parent}|${n}|${salt}`).digest('hex')}`;

export class MemoryChain {
  readonly blocks: ChainBlock[] = [];
  private readonly listeners = new Set<(n: number) => void>();
  /** Submissions wait (never finalize) while true. */
  stalled = false;
  /** No client can reach the chain while true. */
  down = false;
  private readonly waiting: (() => void)[] = [];
  readonly balances = new Map<string, bigint>();
  fee = 10n;
  timeMs: number;

  constructor(startMs = 1_700_000_000_000, salt = 'memory') {
    this.timeMs = startMs;
    this.blocks.push({ number: 0, hash: GENESIS, parentHash: `0x${'00'.repeat(32)}`, timestampMs: startMs, remarks: [] });
    this.salt = salt;
    this.produce([]);
  }
  private readonly salt: string;

  get genesisHash(): string {
    return GENESIS;
  }

  get head(): ChainBlock {
    return this.blocks[this.blocks.length - 1]!;
  }

  /** Makes (and finalizes) a block holding `remarks`. */
  produce(remarks: { signer: string; data: Uint8Array }[]): ChainBlock {
    const parent = this.head;
    this.timeMs += 6000;
    const number = parent.number + 1;
    const block: ChainBlock = {
      number,
      hash: hashOf(parent.hash, number, this.salt),
      parentHash: parent.hash,
      timestampMs: this.timeMs,
      remarks: remarks.map((r, i) => ({ index: i + 1, signer: r.signer, data: r.data })),
    };
    this.blocks.push(block);
    for (const l of this.listeners) l(number);
    return block;
  }

  /** Lets stalled submissions finish. */
  resume(): void {
    this.stalled = false;
    for (const w of this.waiting.splice(0)) w();
  }

  subscribe(l: (n: number) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  waitUnstalled(): Promise<void> {
    return this.stalled ? new Promise((r) => this.waiting.push(r)) : Promise.resolve();
  }

  client(account: string, balance = 1_000_000n): MemoryChainClient {
    this.balances.set(account, balance);
    return new MemoryChainClient(this, account);
  }
}

export class MemoryChainClient implements ChainClient {
  private readonly connectionListeners = new Set<(c: boolean, url: string | null) => void>();
  readonly submitted: Uint8Array[] = [];
  private busy = false;

  constructor(
    private readonly chain: MemoryChain,
    private readonly account: string,
  ) {}

  get connected(): boolean {
    return !this.chain.down;
  }

  /** Tells the listeners the chain went away or came back (tests flip `chain.down`, then call this). */
  announceConnection(): void {
    for (const l of this.connectionListeners) l(this.connected, this.connected ? 'memory://chain' : null);
  }

  async connect(): Promise<void> {
    if (this.chain.down) throw new ChainError('unavailable', 'no chain endpoint answers');
  }
  info(): ChainInfo {
    return {
      genesisHash: this.chain.genesisHash,
      specName: 'memory',
      tokenSymbol: 'UNIT',
      tokenDecimals: 12,
      account: this.account,
      maxRemarkBytes: 1_000_000,
    };
  }
  async finalizedNumber(): Promise<number> {
    if (this.chain.down) throw new ChainError('unavailable', 'down');
    return this.chain.head.number;
  }
  async block(number: number): Promise<ChainBlock> {
    if (this.chain.down) throw new ChainError('unavailable', 'down');
    const b = this.chain.blocks[number];
    if (b === undefined) throw new Error(`no block ${number}`);
    return b;
  }
  onFinalized(listener: (n: number) => void): () => void {
    return this.chain.subscribe((n) => {
      if (!this.chain.down) listener(n);
    });
  }
  async submitRemark(data: Uint8Array): Promise<RemarkIncluded> {
    if (this.busy) throw new Error('two submissions in flight');
    this.busy = true;
    try {
      if (this.chain.down) throw new ChainError('unavailable', 'down');
      const balance = this.chain.balances.get(this.account) ?? 0n;
      if (balance < this.chain.fee) throw new ChainError('insufficient_funds', 'Inability to pay some fees (e.g. account balance too low)');
      this.submitted.push(data);
      await this.chain.waitUnstalled();
      this.chain.balances.set(this.account, balance - this.chain.fee);
      const b = this.chain.produce([{ signer: this.account, data }]);
      return { blockNumber: b.number, blockHash: b.hash, fee: this.chain.fee };
    } finally {
      this.busy = false;
    }
  }
  async balance(): Promise<bigint> {
    return this.chain.balances.get(this.account) ?? 0n;
  }
  async estimateFee(): Promise<bigint> {
    return this.chain.fee;
  }
  onConnection(listener: (connected: boolean, url: string | null) => void): () => void {
    this.connectionListeners.add(listener);
    return () => this.connectionListeners.delete(listener);
  }
  async close(): Promise<void> {}
}
