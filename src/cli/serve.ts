/** `ddn serve`: runs a node until SIGTERM/SIGINT. */
import { errorCodeOf, memberOf, messageOf } from '../base/guards.js';
import { isStorageFailure } from '../base/storage-errors.js';
import type { Role } from '../app/config.js';
import { DataDirError } from '../app/node-keys.js';
import { startNode } from '../app/node.js';
import { buildInfo, type BuildInfo } from '../app/version.js';
import { EXIT } from './exit-codes.js';
import type { CliCommand, CliIo } from './io.js';
import { nodeConfigOrExit } from './node-config.js';
import { StoreSpaceError } from '../store/sqlite/database.js';

const USAGE =
  'usage: ddn serve [options]\n\nRuns the enabled roles (Directory, Relay, Cache) over an embedded ledger until SIGTERM or SIGINT, then\n' +
  'finishes in-flight requests and closes the stores. Exit status: 0 after such a stop, 1 when it cannot start\n' +
  '(a port in use, an unusable data directory), 2 on a bad option.\n';

/** The single stdout line `ddn serve` prints once every role listens: the URLs, then the version (and commit). */
export function listeningLine(urls: Readonly<Partial<Record<Role, string>>>, build: BuildInfo = buildInfo()): string {
  const line: Record<string, string> = { event: 'listening' };
  for (const role of ['directory', 'relay', 'cache'] as const) {
    const url = urls[role];
    if (url !== undefined) line[`${role}_url`] = url;
  }
  line.version = build.version;
  if (build.commit !== undefined) line.commit = build.commit;
  return `${JSON.stringify(line)}\n`;
}

/** An operating-system failure (port in use, permission denied, …): its message says it all, no stack needed. */
function isSystemError(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof memberOf(err, 'syscall') === 'string';
}

/** What a start that met a full disk says. */
function noRoomMessage(err: unknown): string {
  if (err instanceof StoreSpaceError) return err.message;
  return `no room on a disk the node writes to (${errorCodeOf(err) ?? 'storage failure'}): ${messageOf(err)}; free some space and start again`;
}

async function serve(args: string[], io: CliIo): Promise<number> {
  const config = nodeConfigOrExit('serve', USAGE, args, io);
  if (typeof config === 'number') return config;
  // Listen for signals before starting so one arriving during start-up still shuts the node down cleanly.
  const signal = io.shutdownSignal();
  let node;
  try {
    node = await startNode(config);
  } catch (err) {
    if (isStorageFailure(err)) {
      // a store that could not be opened, migrated or caught up for lack of space (nothing half-done): no stack
      io.stderr(`ddn serve: ${noRoomMessage(err)}\n`);
      return EXIT.failure;
    }
    if (!(err instanceof DataDirError) && !isSystemError(err)) throw err;
    io.stderr(`ddn serve: ${err.message}\n`);
    return EXIT.failure;
  }
  io.stdout(listeningLine(node.urls));
  await signal;
  await node.close();
  return EXIT.ok;
}

/** The `serve` command. */
export const serveCommand: CliCommand = { summary: 'run a node (Directory, Relay, Cache)', run: serve };
