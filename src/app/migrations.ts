/**
 * `ddn migrate`: brings every store the configured roles use to the current schema version without starting the
 * service (`ddn serve` also migrates on start). With `--db` the PostgreSQL schema; otherwise the SQLite files
 * of the data directory. Migrations are numbered per namespace, recorded in `schema_migrations`, applied once,
 * and serialised across processes.
 */
import { join } from 'node:path';
import { EVENT_MIGRATIONS } from '../store/sqlite/event-run-store.js';
import { DNS_CHALLENGE_PG_MIGRATIONS, DNS_CHALLENGE_PG_NAMESPACE } from '../store/postgres/dns-challenge-store.js';
import { LEDGER_MIGRATION_NAMESPACE, LEDGER_PG_MIGRATIONS } from '../store/postgres/ledger-tables.js';
import { LEDGER_FEED_PG_MIGRATIONS, LEDGER_FEED_PG_NAMESPACE } from '../store/postgres/ledger-feed.js';
import { PG_LIVE_MIGRATIONS, PG_LIVE_NAMESPACE } from '../store/postgres/live-fanout.js';
import { PG_MAILBOX_MIGRATIONS } from '../store/postgres/mailbox-store.js';
import { migratePg, openPgPool, type PgMigration } from '../store/postgres/pool.js';
import { PG_RELAY_MIGRATIONS, PG_RELAY_NAMESPACE } from '../store/postgres/relay-staging-store.js';
import { openSqlite, type Migration } from '../store/sqlite/database.js';
import { DNS_CHALLENGE_MIGRATIONS } from '../store/sqlite/dns-challenge-store.js';
import { LEDGER_HISTORY_MIGRATIONS, LEDGER_HISTORY_NAMESPACE } from '../store/sqlite/ledger-history.js';
import { LEDGER_MIGRATIONS } from '../store/sqlite/ledger-store.js';
import { LEDGER_FEED_MIGRATIONS, LEDGER_FEED_NAMESPACE } from '../store/sqlite/ledger-feed.js';
import { MAILBOX_MIGRATIONS } from '../store/sqlite/mailbox-store.js';
import { RELAY_MIGRATIONS } from '../store/sqlite/relay-staging-store.js';
import { CACHE_DB_FILE } from './cache-role.js';
import { RATE_LIMIT_PG_MIGRATIONS, RATE_LIMIT_PG_NAMESPACE } from './rate-limits.js';
import type { Config, Role } from './config.js';
import { EVENTS_DB_FILE } from './event-processing.js';
import { LEDGER_FILE } from './ledger-backend.js';
import { RELAY_DB_FILE } from './relay-role.js';

export interface MigrationReport {
  database: 'sqlite' | 'postgres';
  /** The data directory, or the PostgreSQL schema. */
  location: string;
  /** `namespace@version` of every store brought up to date. */
  applied: string[];
}

interface Step<M> {
  namespace: string;
  migrations: readonly M[];
  /** SQLite only: the file in the data directory. */
  file?: string;
}

/** The stores of each role; the ledger file exists on every node (it holds the node's own identity chain). */
function sqliteSteps(roles: readonly Role[]): Step<Migration>[] {
  const steps: Step<Migration>[] = [
    { namespace: 'ledger', migrations: LEDGER_MIGRATIONS, file: LEDGER_FILE },
    { namespace: LEDGER_HISTORY_NAMESPACE, migrations: LEDGER_HISTORY_MIGRATIONS, file: LEDGER_FILE },
    { namespace: LEDGER_FEED_NAMESPACE, migrations: LEDGER_FEED_MIGRATIONS, file: LEDGER_FILE },
  ];
  if (roles.includes('directory')) steps.push({ namespace: 'directory', migrations: DNS_CHALLENGE_MIGRATIONS, file: LEDGER_FILE });
  if (roles.includes('cache')) {
    steps.push({ namespace: 'cache', migrations: MAILBOX_MIGRATIONS, file: CACHE_DB_FILE });
    steps.push({ namespace: 'events', migrations: EVENT_MIGRATIONS, file: EVENTS_DB_FILE });
  }
  if (roles.includes('relay')) steps.push({ namespace: 'relay', migrations: RELAY_MIGRATIONS, file: RELAY_DB_FILE });
  return steps;
}

function pgSteps(roles: readonly Role[]): Step<PgMigration>[] {
  const steps: Step<PgMigration>[] = [];
  if (roles.includes('directory')) {
    steps.push({ namespace: LEDGER_MIGRATION_NAMESPACE, migrations: LEDGER_PG_MIGRATIONS });
    steps.push({ namespace: LEDGER_FEED_PG_NAMESPACE, migrations: LEDGER_FEED_PG_MIGRATIONS });
    steps.push({ namespace: DNS_CHALLENGE_PG_NAMESPACE, migrations: DNS_CHALLENGE_PG_MIGRATIONS });
  }
  if (roles.includes('cache')) steps.push({ namespace: 'cache', migrations: PG_MAILBOX_MIGRATIONS });
  if (roles.includes('relay')) {
    steps.push({ namespace: PG_RELAY_NAMESPACE, migrations: PG_RELAY_MIGRATIONS });
    steps.push({ namespace: PG_LIVE_NAMESPACE, migrations: PG_LIVE_MIGRATIONS });
  }
  // every role counts its request rate limits there
  steps.push({ namespace: RATE_LIMIT_PG_NAMESPACE, migrations: RATE_LIMIT_PG_MIGRATIONS });
  return steps;
}

const latest = (s: Step<{ version: number }>): string => `${s.namespace}@${Math.max(0, ...s.migrations.map((m) => m.version))}`;

export async function migrateStores(config: Config): Promise<MigrationReport> {
  if (config.db === null) {
    const steps = sqliteSteps(config.roles);
    for (const s of steps) openSqlite(join(config.dataDir, s.file!), s.migrations, s.namespace).close();
    return { database: 'sqlite', location: config.dataDir, applied: steps.map(latest) };
  }
  const steps = pgSteps(config.roles);
  const pool = await openPgPool({ url: config.db.url, schema: config.db.schema, max: 1 });
  try {
    for (const s of steps) await migratePg(pool, s.migrations, s.namespace);
  } finally {
    await pool.end();
  }
  return { database: 'postgres', location: config.db.schema, applied: steps.map(latest) };
}
