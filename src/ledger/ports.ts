/**
 * The ledger split by who uses it. The Directory reads finalized state, blocks, transactions and history
 * ({@link LedgerReads}) and writes through the pool ({@link LedgerPool}); where the order of blocks and their
 * finality come from ({@link LedgerOrder}) is one replaceable part, driven from outside the Directory: the
 * embedded producer's timer (src/ledger/production.ts), the PostgreSQL producer and replicas
 * (src/store/postgres/ledger-sync.ts), a Substrate chain the Directories follow (src/chain/), or a mirror
 * importing a primary's blocks (src/mirror/). One class implements all three today; the Directory sees only the
 * first two.
 */
import type { Ledger } from './chain.js';

/** What reads use: finalized state, blocks, transactions, history, the export feed. */
export type LedgerReads = Pick<
  Ledger,
  | 'genesisHash'
  | 'profile'
  | 'finalizedView'
  | 'stateAt'
  | 'finalizedRefNow'
  | 'touchedKeys'
  | 'headRef'
  | 'txView'
  | 'blockRef'
  | 'block'
  | 'lastFailure'
  | 'subjectHistory'
  | 'finalizedFeed'
  | 'finalizedFeedSeq'
  | 'finalizedFeedTally'
  | 'finalizedLatestFeed'
  | 'blockTxCount'
  | 'onBlock'
>;

/** What writes use: the pool's state (head plus pending changes), dry runs, admission. */
export type LedgerPool = Pick<
  Ledger,
  'poolView' | 'check' | 'admit' | 'isPending' | 'pendingEntries' | 'hasPendingFor' | 'poolSize' | 'maxPoolSize' | 'poolNowMs' | 'freshPool'
>;

/** The Directory's view of the ledger: reads and the pool, never block production. */
export type DirectoryLedger = LedgerReads & LedgerPool;

/** Where blocks come from: this ledger's producer, a shared database's producer, a chain, a primary's feed. */
export type LedgerOrder = Pick<
  Ledger,
  | 'produceBlock'
  | 'buildBlock'
  | 'extendBuilt'
  | 'commitBuilt'
  | 'applyReplicatedBlock'
  | 'importBlock'
  | 'applyOrdered'
  | 'orderCursor'
  | 'awaitingOrder'
  | 'holdAdmissions'
  | 'stop'
>;
