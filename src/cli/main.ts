/** The `ddn` command dispatcher. Each subcommand lives in its own file and is listed in {@link COMMANDS}. */
import { buildInfo } from '../app/version.js';
import { EXIT, EXIT_HELP } from './exit-codes.js';
import { processIo, type CliCommand, type CliIo } from './io.js';
import { appCommand } from './app.js';
import { didCommand } from './did.js';
import { healthCommand } from './health.js';
import { keyCommand } from './key.js';
import { personaCommand } from './persona.js';
import { policyCommand } from './policy.js';
import { receiveCommand } from './receive.js';
import { sendCommand } from './send.js';

/**
 * A command whose module is loaded when it runs: the server commands pull in fastify, the stores and the ledger,
 * which a client command (a long `ddn receive` whose memory is bounded) should not carry.
 */
function lazy(summary: string, load: () => Promise<CliCommand>): CliCommand {
  return { summary, run: async (args, io) => (await load()).run(args, io) };
}

/** Every subcommand by name. */
export const COMMANDS: Readonly<Record<string, CliCommand>> = Object.freeze({
  serve: lazy('run a node (Directory, Relay, Cache)', async () => (await import('./serve.js')).serveCommand),
  migrate: lazy('apply the store migrations and exit', async () => (await import('./migrate.js')).migrateCommand),
  mirror: lazy('run a read-only mirror of a Directory', async () => (await import('./mirror.js')).mirrorCommand),
  network: lazy('a ddn network on a Substrate chain: network file, account key', async () => (await import('./network.js')).networkCommand),
  health: healthCommand,
  key: keyCommand,
  did: didCommand,
  send: sendCommand,
  receive: receiveCommand,
  persona: personaCommand,
  policy: policyCommand,
  app: appCommand,
});

/** The top-level usage text. */
export function usage(): string {
  const rows = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)}${c.summary}`);
  return (
    `usage: ddn <command> [options]\n       ddn --version\n\ncommands:\n${rows.join('\n')}\n\n` +
    `run 'ddn <command> --help' for a command's options\n${EXIT_HELP}\n`
  );
}

/**
 * Runs `ddn` with `argv` (the arguments after the program name) and resolves to the exit status of
 * exit-codes.ts: 0 success, 1 failure, 2 usage (no or unknown command, bad options), 3 timeout, 130 interrupted.
 */
export async function main(argv: string[], io: CliIo = processIo()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    io.stdout(usage());
    return EXIT.ok;
  }
  if (name === '--version' || name === '-V' || name === 'version') {
    // one JSON result, as every command prints: {"version":"0.1.0","commit":"…"} (commit in a git checkout)
    io.stdout(`${JSON.stringify(buildInfo())}\n`);
    return EXIT.ok;
  }
  const command = name === undefined ? undefined : Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (command === undefined) {
    // a JSON result like every other failure (scripts read stdout); the usage text goes to stderr
    const message = name === undefined ? 'a command is required' : `unknown command '${name}'`;
    io.stdout(`${JSON.stringify({ error: 'invalid_usage', code: 'invalid_usage', message })}\n`);
    io.stderr(`ddn: ${message}\n${usage()}`);
    return EXIT.usage;
  }
  return command.run(rest, io);
}
