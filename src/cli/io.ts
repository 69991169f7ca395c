/** What a CLI command may touch of its process, passed in so commands stay testable in-process. */

/** Process access of a command. */
export interface CliIo {
  /** Writes to stdout (machine-readable output only). */
  stdout(text: string): void;
  /** Writes to stderr (usage, human messages). */
  stderr(text: string): void;
  readonly env: NodeJS.ProcessEnv;
  /** Standard input, for commands that read data from `-` (absent in tests that give none). */
  readonly stdin?: NodeJS.ReadableStream;
  /** True when stderr is a terminal: progress bars are drawn only then. */
  readonly stderrIsTTY?: boolean;
  /** Resolves with the signal name at the first SIGTERM or SIGINT; a second one then terminates the process. */
  shutdownSignal(): Promise<NodeJS.Signals>;
}

/** The real process's {@link CliIo}. */
export function processIo(): CliIo {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    env: process.env,
    stdin: process.stdin,
    stderrIsTTY: process.stderr.isTTY === true,
    shutdownSignal: () =>
      new Promise((resolve) => {
        const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];
        const handler = (signal: NodeJS.Signals): void => {
          for (const s of signals) process.off(s, handler);
          resolve(signal);
        };
        for (const s of signals) process.on(s, handler);
      }),
  };
}

/** A command of the `ddn` CLI. */
export interface CliCommand {
  /** One line for the usage text. */
  readonly summary: string;
  /** Runs with the arguments after the command name; resolves to the exit code. */
  run(args: string[], io: CliIo): Promise<number>;
}
