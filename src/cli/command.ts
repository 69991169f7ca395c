/**
 * The shape every user command shares: options parsed with `node:util` `parseArgs`, `--help` on stdout everywhere,
 * one JSON result on stdout, human progress on stderr, and the exit status of exit-codes.ts (0 success, 1 failure,
 * 2 usage, 3 timeout, 130 interrupted).
 */
import { errorCodeOf, memberOf } from '../base/guards.js';
import { parseArgs } from 'node:util';
import { EXIT, EXIT_HELP, signalExit } from './exit-codes.js';
import { directoryHealth, networkOf } from './directory-network.js';
import { fillFromIdentityBook, type IdentityRole, type NetworkLookup } from './identity-options.js';
import { commandFetch, DEADLINE_HELP, type DeadlineValues } from './request-deadlines.js';
import type { CliCommand, CliIo } from './io.js';
import { UsageError } from './usage-error.js';

/** One option of a command. */
export interface OptionDef {
  type: 'string' | 'boolean';
  multiple?: boolean;
  help: string;
  /** Placeholder in the help text, e.g. `FILE`. */
  arg?: string;
  /** Environment variable read when the flag is absent. */
  env?: string;
  /** Shown in the help text and used when neither flag nor env variable is given. */
  default?: string;
  required?: boolean;
  /** Taken from the identity book (identity-book.ts) when absent: the identity's DID, signing key or decryption key. */
  identity?: IdentityRole;
  /** With `identity: 'key'`: the key of the DID given in the first of these options (e.g. `operator`), from the book. */
  keyOf?: readonly string[];
}

export type OptionDefs = Readonly<Record<string, OptionDef>>;

/** The parsed value of each option. */
export type OptionValues<O extends OptionDefs> = {
  [K in keyof O]: O[K]['type'] extends 'boolean'
    ? boolean
    : O[K]['multiple'] extends true
      ? string[]
      : O[K]['required'] extends true
        ? string
        : string | undefined;
};

export { UsageError };

/** A failure whose wait ran out (exit code 3). */
export function isTimeout(e: unknown): boolean {
  const code = memberOf(e, 'code');
  const name = memberOf(e, 'name');
  return code === 'wait_timeout' || code === 'request_timeout' || name === 'TimeoutError';
}

/** What a running command may use. */
export interface CommandContext {
  io: CliIo;
  /** One human line on stderr. */
  info(line: string): void;
  /** Records how far the command got (merged over earlier calls); the JSON summary of an interrupt includes it. */
  progress(fields: Record<string, unknown>): void;
}

/** A leaf command. */
export interface LeafSpec<O extends OptionDefs> {
  summary: string;
  /** The argument line after the command path, e.g. `DID` or `--to DID --input FILE`. */
  synopsis: string;
  description?: string;
  options: O;
  /** Names of positional arguments (all optional unless listed in `requiredPositionals`). */
  positionals?: readonly string[];
  requiredPositionals?: number;
  /** Resolves with the JSON result; throw to fail. */
  run(ctx: CommandContext, opts: OptionValues<O>, positionals: string[]): Promise<unknown>;
  /** Exit code for a result (default 0); e.g. receive exits 1 when a message failed. */
  exitCode?(result: unknown): number;
}

function optionHelp(options: OptionDefs): string {
  const rows = Object.entries(options).map(([name, o]) => {
    const flag = `--${name}${o.type === 'string' ? ` ${o.arg ?? 'VALUE'}` : ''}`;
    const extra = [
      // an option the identity book can fill is required only when the book cannot: its help says so
      o.required && o.identity === undefined ? 'required' : '',
      o.multiple ? 'repeatable' : '',
      o.env ? `env ${o.env}` : '',
      o.default !== undefined ? `default ${o.default}` : '',
    ]
      .filter((x) => x !== '')
      .join(', ');
    return `  ${flag.padEnd(34)}${o.help}${extra === '' ? '' : ` (${extra})`}`;
  });
  return [...rows, `  ${'--help'.padEnd(34)}this text (on stdout)`].join('\n');
}

/** The message of a fetch that could not connect (fetch rejects with a TypeError whose `cause` says why). */
export function connectionFailure(e: unknown): string | undefined {
  if (!(e instanceof TypeError) || e.message !== 'fetch failed') return undefined;
  const message = memberOf(memberOf(e, 'cause'), 'message');
  return `cannot connect: ${typeof message === 'string' ? message : 'fetch failed'}`;
}

/** Writes the one JSON result line. */
export function printResult(io: CliIo, result: unknown): void {
  io.stdout(`${JSON.stringify(result)}\n`);
}

/** The JSON result of a failure: `{error, code, message, details?}` like the servers' error bodies. */
export function errorResult(e: unknown): Record<string, unknown> {
  const unreachable = connectionFailure(e);
  const code = errorCodeOf(e) ?? (isTimeout(e) ? 'request_timeout' : unreachable !== undefined ? 'connection_failed' : 'failed');
  const said = memberOf(e, 'message');
  const message = unreachable ?? (typeof said === 'string' ? said : String(e));
  const out: Record<string, unknown> = { error: code, code, message };
  const details = memberOf(e, 'details');
  if (typeof details === 'object' && details !== null) out.details = details;
  return out;
}

/**
 * The network of the Directory a command's options name (`--directory`), for the identity book; none for a command
 * without one.
 */
function networkLookup(values: Record<string, unknown>, info: (line: string) => void): NetworkLookup {
  return async () => {
    const directory = values.directory;
    if (typeof directory !== 'string') return undefined;
    const health = await directoryHealth(directory, commandFetch(values as DeadlineValues, 'the Directory', info));
    return { network: networkOf(health), directory };
  };
}

async function parse<O extends OptionDefs>(
  spec: LeafSpec<O>,
  args: string[],
  env: NodeJS.ProcessEnv,
  info: (line: string) => void,
): Promise<{ values: OptionValues<O>; positionals: string[] }> {
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {};
  for (const [name, o] of Object.entries(spec.options)) options[name] = o.multiple ? { type: o.type, multiple: true } : { type: o.type };
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message.replace(/\. To specify.*$/s, '') : String(e));
  }
  const values: Record<string, unknown> = {};
  for (const [name, o] of Object.entries(spec.options)) {
    let v: unknown = parsed.values[name];
    if (v === undefined && o.env !== undefined && env[o.env] !== undefined && env[o.env] !== '')
      v = o.type === 'boolean' ? env[o.env] === '1' || env[o.env] === 'true' : env[o.env];
    if (v === undefined && o.default !== undefined && o.type === 'string') v = o.multiple ? [o.default] : o.default;
    if (v === undefined) v = o.type === 'boolean' ? false : o.multiple ? [] : undefined;
    values[name] = v;
  }
  await fillFromIdentityBook(spec.options, values, env, networkLookup(values, info));
  for (const [name, o] of Object.entries(spec.options)) {
    const v = values[name];
    if (o.required && (v === undefined || (Array.isArray(v) && v.length === 0))) {
      throw new UsageError(`--${name} is required${o.identity === undefined ? '' : " (or an identity of the book: see 'ddn did list')"}`);
    }
  }
  const max = spec.positionals?.length ?? 0;
  if (parsed.positionals.length > max) throw new UsageError(`unexpected argument '${parsed.positionals[max]}'`);
  if (parsed.positionals.length < (spec.requiredPositionals ?? 0)) throw new UsageError(`missing ${spec.positionals![parsed.positionals.length]}`);
  return { values: values as OptionValues<O>, positionals: parsed.positionals };
}

/** The signal an `interrupted` error names (`signal`), SIGINT when it names none. */
function interruptSignal(e: unknown): NodeJS.Signals {
  const signal = memberOf(e, 'signal');
  return signal === 'SIGTERM' || signal === 'SIGHUP' ? signal : 'SIGINT';
}

/** `io` with `shutdownSignal` shared by the leaf and the command; `claimed` once the command asked for it. */
function sharedSignalIo(io: CliIo): { io: CliIo; signal(): Promise<NodeJS.Signals>; claimed(): boolean } {
  let signal: Promise<NodeJS.Signals> | undefined;
  let claimed = false;
  const shared = (): Promise<NodeJS.Signals> => (signal ??= io.shutdownSignal());
  const wrapped: CliIo = {
    stdout: (t) => io.stdout(t),
    stderr: (t) => io.stderr(t),
    env: io.env,
    stdin: io.stdin,
    stderrIsTTY: io.stderrIsTTY,
    shutdownSignal: () => {
      claimed = true;
      return shared();
    },
  };
  return { io: wrapped, signal: shared, claimed: () => claimed };
}

/**
 * Builds a leaf command named `path` (e.g. `ddn did resolve`). A SIGINT or SIGTERM while it runs ends it with a
 * JSON summary (`code: interrupted`, what {@link CommandContext.progress} recorded) and exit 130 (143 for
 * SIGTERM), unless the command asked for the signal itself (`ctx.io.shutdownSignal()`, as `receive --follow` does
 * to stop following), in which case its own result is printed as usual — or, when it throws an error with code
 * `interrupted` (and `signal`), that error as the summary with exit 130 (143).
 */
export function leaf<O extends OptionDefs>(path: string, spec: LeafSpec<O>): CliCommand {
  const help = (): string =>
    `usage: ${path} ${spec.synopsis}\n\n${spec.description ?? spec.summary}\n\noptions:\n${optionHelp(spec.options)}\n\n` +
    ('connect-timeout' in spec.options ? DEADLINE_HELP : '') +
    `Prints one JSON result on stdout; progress goes to stderr. ${EXIT_HELP}\n`;
  return {
    summary: spec.summary,
    async run(args: string[], parentIo: CliIo): Promise<number> {
      if (args.includes('--help') || args.includes('-h')) {
        parentIo.stdout(help());
        return EXIT.ok;
      }
      const started = Date.now();
      const signals = sharedSignalIo(parentIo);
      const io = signals.io;
      let progress: Record<string, unknown> = {};
      const ctx: CommandContext = { io, info: (line) => io.stderr(`${line}\n`), progress: (f) => void (progress = { ...progress, ...f }) };
      try {
        const { values, positionals } = await parse(spec, args, io.env, ctx.info);
        // made after the (asynchronous) parse, so that a command that asks for the signal has asked before it is seen
        const interrupted = signals.signal().then((signal) => (signals.claimed() ? new Promise<never>(() => {}) : { signal }));
        const outcome = await Promise.race([spec.run(ctx, values, positionals).then((result) => ({ result })), interrupted]);
        if ('signal' in outcome) {
          const { signal } = outcome;
          printResult(io, {
            error: 'interrupted',
            code: 'interrupted',
            message: `${path} interrupted by ${signal}`,
            signal,
            elapsed_ms: Date.now() - started,
            ...progress,
          });
          io.stderr(`${path}: interrupted by ${signal}\n`);
          return signalExit(signal);
        }
        printResult(io, outcome.result);
        return spec.exitCode?.(outcome.result) ?? EXIT.ok;
      } catch (e) {
        const result = errorResult(e);
        printResult(io, result);
        io.stderr(`${path}: ${String(result.message)}\n`);
        if (e instanceof UsageError) {
          io.stderr(`run '${path} --help' for the options\n`);
          return EXIT.usage;
        }
        // a command that handled the signal itself and then failed with code 'interrupted' (and the signal)
        if (result.code === 'interrupted') return signalExit(interruptSignal(e));
        return isTimeout(e) ? EXIT.timeout : EXIT.failure;
      }
    },
  };
}

/** A command with subcommands (`ddn did …`). */
export function group(path: string, summary: string, children: Readonly<Record<string, CliCommand>>): CliCommand {
  const usage = (): string => {
    const rows = Object.entries(children).map(([n, c]) => `  ${n.padEnd(22)}${c.summary}`);
    return `usage: ${path} <command> [options]\n\n${summary}\n\ncommands:\n${rows.join('\n')}\n\nrun '${path} <command> --help' for a command's options\n`;
  };
  return {
    summary,
    async run(args: string[], io: CliIo): Promise<number> {
      const [name, ...rest] = args;
      if (name === '--help' || name === '-h' || name === 'help') {
        io.stdout(usage());
        return EXIT.ok;
      }
      const child = name !== undefined && Object.hasOwn(children, name) ? children[name] : undefined;
      if (child === undefined) {
        const e = new UsageError(name === undefined ? `${path}: a command is required` : `unknown command '${path} ${name}'`);
        printResult(io, errorResult(e));
        io.stderr(`${e.message}\n${usage()}`);
        return EXIT.usage;
      }
      return child.run(rest, io);
    },
  };
}
