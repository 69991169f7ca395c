/** The node configuration of `ddn serve` and `ddn migrate`: `--help`, then flags and `DDN_*` variables. */
import { ConfigError, configHelp, loadConfig, type Config } from '../app/config.js';
import { EXIT } from './exit-codes.js';
import type { CliIo } from './io.js';

/**
 * The configuration `args` and the environment give, or the exit code to return: 0 after printing `usage` and
 * the options for `--help` (those named in `only`, when given), 2 with a message naming the option on misuse.
 */
export function nodeConfigOrExit(command: string, usage: string, args: string[], io: CliIo, only?: readonly string[]): Config | number {
  if (args.includes('--help') || args.includes('-h')) {
    io.stdout(`${usage}\n${configHelp(only)}`);
    return EXIT.ok;
  }
  try {
    return loadConfig(args, io.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.stderr(`ddn ${command}: ${err.message}\nrun 'ddn ${command} --help' for the options\n`);
    return EXIT.usage;
  }
}
