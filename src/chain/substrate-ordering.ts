/**
 * A Substrate chain as the ledger's source of order and finality (`--ledger substrate`, docs/chain.md): the
 * follower applies the chain's finalized ddn remarks, the submitter posts this Directory's admissions. While no
 * chain endpoint answers, or once following has halted, admissions are held (503 `chain_unavailable`) and reads
 * serve the last applied state.
 */
import type { Logger } from 'pino';
import type { Ledger } from '../ledger/chain.js';
import { ChainFollower, type FollowerStatus } from './chain-follower.js';
import type { ChainClient, ChainInfo } from './chain-port.js';
import { ChainSubmitter, type SubmitterSettings, type SubmitterStats } from './chain-submitter.js';
import type { NetworkDefinition } from './network-definition.js';

export interface ChainOrderingStatus extends FollowerStatus {
  readonly connected: boolean;
  readonly info: ChainInfo;
  readonly submitter: Readonly<SubmitterStats>;
  /** Transactions this Directory accepted that the chain has not ordered yet. */
  readonly awaiting: number;
  /** The account's free balance when last read (null: not read yet). */
  readonly balance: bigint | null;
}

export interface ChainOrdering {
  status(): ChainOrderingStatus;
  /** Told after each chain block applied. */
  onApplied(listener: (status: FollowerStatus) => void): () => void;
  close(): Promise<void>;
}

export interface ChainOrderingDeps {
  client: ChainClient;
  ledger: Ledger;
  network: NetworkDefinition;
  logger: Logger;
  /** How long the start waits for a chain endpoint. */
  connectTimeoutMs?: number;
  /** How often the account balance is read (metrics). */
  balanceEveryMs?: number;
  submitter?: Partial<SubmitterSettings>;
}

/**
 * Connects to the chain, checks it is the network's (throws NetworkDefinitionError or ChainError when not, or
 * when no endpoint answers in time) and starts following and submitting.
 */
export async function startChainOrdering(deps: ChainOrderingDeps): Promise<ChainOrdering> {
  const { client, ledger, network, logger } = deps;
  await client.connect(deps.connectTimeoutMs ?? 60_000);
  const follower = new ChainFollower(client, ledger, network, logger);
  await follower.verifyChain();
  const submitter = new ChainSubmitter(client, ledger, follower, network.networkId, logger, deps.submitter);

  const gate = () => {
    const halted = follower.status().halted;
    ledger.holdAdmissions(halted !== null ? `following the chain stopped: ${halted}` : client.connected ? null : 'no chain endpoint answers');
  };
  const stopConnection = client.onConnection((connected, url) => {
    logger[connected ? 'info' : 'warn']({ url }, connected ? 'chain endpoint connected' : 'chain endpoint lost');
    gate();
  });
  const stopGate = follower.onApplied(gate);

  let balance: bigint | null = null;
  const readBalance = () =>
    client.balance().then(
      (b) => {
        balance = b;
      },
      (err: unknown) => logger.debug({ err }, 'reading the chain account balance failed'),
    );
  await readBalance();
  const balanceTimer = setInterval(() => void readBalance(), deps.balanceEveryMs ?? 30_000);
  balanceTimer.unref();

  const finalizedAtStart = await client.finalizedNumber();
  follower.start();
  submitter.start(finalizedAtStart);
  gate();
  logger.info(
    { network: network.networkId, account: client.info().account, applied: follower.status().applied.number, finalized: finalizedAtStart },
    'following the chain',
  );

  return {
    status: () => ({
      ...follower.status(),
      connected: client.connected,
      info: client.info(),
      submitter: submitter.stats,
      awaiting: ledger.awaitingOrder().length,
      balance,
    }),
    onApplied: (l) => follower.onApplied(l),
    close: async () => {
      clearInterval(balanceTimer);
      stopConnection();
      stopGate();
      submitter.stop();
      follower.stop();
      await client.close();
    },
  };
}
