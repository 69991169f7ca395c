/** `ddn migrate`: applies the store migrations of the configured roles and exits (see src/app/migrations.ts). */
import { migrateStores } from '../app/migrations.js';
import { EXIT } from './exit-codes.js';
import type { CliCommand, CliIo } from './io.js';
import { nodeConfigOrExit } from './node-config.js';

const USAGE =
  'usage: ddn migrate [--db postgres://… [--db-schema S]] [--data-dir DIR] [--roles …]\n\n' +
  'Brings the stores of the given roles to the current schema version (PostgreSQL with --db, else the data\n' +
  "directory's SQLite files) and prints one JSON line. `ddn serve` migrates on start too; run this first when\n" +
  'several processes start at once on a new database, or to migrate ahead of an upgrade.\n' +
  "It accepts every 'ddn serve' option (so one command line serves both) and reads only these.\n" +
  'Exit status: 0 migrated, 1 failure (an unreachable database, a failed migration), 2 on a bad option.\n';

/** The options `ddn migrate` reads (it accepts every `ddn serve` option, so one command line serves both). */
const MIGRATE_OPTIONS = ['data-dir', 'roles', 'db', 'db-schema'];

async function migrate(args: string[], io: CliIo): Promise<number> {
  const config = nodeConfigOrExit('migrate', USAGE, args, io, MIGRATE_OPTIONS);
  if (typeof config === 'number') return config;
  try {
    const report = await migrateStores(config);
    io.stdout(`${JSON.stringify({ event: 'migrated', ...report })}\n`);
    return EXIT.ok;
  } catch (err) {
    io.stderr(`ddn migrate: ${err instanceof Error ? err.message : String(err)}\n`);
    return EXIT.failure;
  }
}

/** The `migrate` command. */
export const migrateCommand: CliCommand = { summary: 'apply the store migrations and exit', run: migrate };
