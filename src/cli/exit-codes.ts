/** The exit status of every `ddn` command (docs/cli.md, "Exit status"). */

export const EXIT = Object.freeze({
  /** The command did what it was asked. */
  ok: 0,
  /** It failed: an error answer, an unreachable node, a bad key file, a message that did not verify. */
  failure: 1,
  /** It was called wrongly: unknown command or option, missing or malformed argument. Nothing was done. */
  usage: 2,
  /** A wait ran out (`--timeout`, a request deadline); what was accepted before stays accepted. */
  timeout: 3,
  /** Interrupted by SIGINT (Ctrl-C): 128 + 2, as shells report it. */
  interrupted: 130,
  /** Stopped by SIGTERM: 128 + 15. */
  terminated: 143,
});

/** The exit status for a command stopped by `signal` (128 + its number: SIGHUP, a launcher gone, is 129). */
export function signalExit(signal: NodeJS.Signals): number {
  return signal === 'SIGINT' ? EXIT.interrupted : signal === 'SIGHUP' ? 129 : EXIT.terminated;
}

/** The table as `--help` ends it. */
export const EXIT_HELP = 'Exit status: 0 success, 1 failure, 2 usage error, 3 timeout, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).';
