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
  /**
   * Resolves with the signal name at the first SIGTERM or SIGINT (or `SIGHUP` when an npm launcher that ran this
   * process went away); a second signal then terminates the process.
   */
  shutdownSignal(): Promise<NodeJS.Signals>;
}

/** How often a process started by npm checks that its parent is still there. */
const PARENT_CHECK_MS = 200;

/**
 * Resolves when the parent process changes (this process was orphaned). Used only under npm (`npm start`,
 * `npx ddn …`): npm runs the command through `sh -c`, forwards SIGTERM to that shell only, and the shell dies
 * without passing it on, which would leave the server listening. The timer does not keep the process alive.
 */
function parentGone(): { promise: Promise<void>; cancel(): void } {
  const parent = process.ppid;
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<void>((resolve) => {
    timer = setInterval(() => {
      if (process.ppid !== parent) resolve();
    }, PARENT_CHECK_MS);
    timer.unref();
  });
  return { promise, cancel: () => clearInterval(timer) };
}

/** True when npm (`npm start`, `npm run`, `npx`) started this process. */
export function startedByNpm(env: NodeJS.ProcessEnv): boolean {
  return env.npm_lifecycle_event !== undefined && env.npm_lifecycle_event !== '';
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
        const watch = startedByNpm(process.env) ? parentGone() : undefined;
        const done = (signal: NodeJS.Signals): void => {
          for (const s of signals) process.off(s, done);
          watch?.cancel();
          resolve(signal);
        };
        for (const s of signals) process.on(s, done);
        void watch?.promise.then(() => done('SIGHUP'));
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
