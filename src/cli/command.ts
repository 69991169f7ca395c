/**
 * The shape every user command shares: options parsed with `node:util` `parseArgs`, `--help` everywhere, one JSON
 * result on stdout, human progress on stderr, and exit codes 0 (success), 1 (failure) and 2 (timeout).
 */
import { parseArgs } from 'node:util';
import type { CliCommand, CliIo } from './io.js';

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
}

export type OptionDefs = Readonly<Record<string, OptionDef>>;

/** The parsed value of each option. */
export type OptionValues<O extends OptionDefs> = {
  [K in keyof O]: O[K]['type'] extends 'boolean' ? boolean : O[K]['multiple'] extends true ? string[] : O[K]['required'] extends true ? string : string | undefined;
};

/** Bad arguments; printed with the command's usage. */
export class UsageError extends Error {
  readonly code = 'invalid_usage';
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A failure whose wait ran out (exit code 2). */
export function isTimeout(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  const name = (e as { name?: unknown })?.name;
  return code === 'wait_timeout' || code === 'request_timeout' || name === 'TimeoutError';
}

/** What a running command may use. */
export interface CommandContext {
  io: CliIo;
  /** One human line on stderr. */
  info(line: string): void;
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
    const extra = [o.required ? 'required' : '', o.multiple ? 'repeatable' : '', o.env ? `env ${o.env}` : '', o.default !== undefined ? `default ${o.default}` : '']
      .filter((x) => x !== '').join(', ');
    return `  ${flag.padEnd(34)}${o.help}${extra === '' ? '' : ` (${extra})`}`;
  });
  return [...rows, `  ${'--help'.padEnd(34)}this text`].join('\n');
}

/** The message of a fetch that could not connect (fetch rejects with a TypeError whose `cause` says why). */
export function connectionFailure(e: unknown): string | undefined {
  if (!(e instanceof TypeError) || e.message !== 'fetch failed') return undefined;
  const cause = (e as { cause?: { message?: unknown } }).cause;
  return `cannot connect: ${typeof cause?.message === 'string' ? cause.message : 'fetch failed'}`;
}

/** Writes the one JSON result line. */
export function printResult(io: CliIo, result: unknown): void {
  io.stdout(`${JSON.stringify(result)}\n`);
}

/** The JSON result of a failure: `{error, code, message, details?}` like the servers' error bodies. */
export function errorResult(e: unknown): Record<string, unknown> {
  const err = e as { code?: unknown; message?: unknown; details?: unknown };
  const unreachable = connectionFailure(e);
  const code = typeof err?.code === 'string' ? err.code : isTimeout(e) ? 'request_timeout' : unreachable !== undefined ? 'connection_failed' : 'failed';
  const message = unreachable ?? (typeof err?.message === 'string' ? err.message : String(e));
  const out: Record<string, unknown> = { error: code, code, message };
  if (typeof err?.details === 'object' && err.details !== null) out.details = err.details;
  return out;
}

function parse<O extends OptionDefs>(spec: LeafSpec<O>, args: string[], env: NodeJS.ProcessEnv): { values: OptionValues<O>; positionals: string[] } {
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
    if (v === undefined && o.env !== undefined && env[o.env] !== undefined && env[o.env] !== '') v = o.type === 'boolean' ? env[o.env] === '1' || env[o.env] === 'true' : env[o.env];
    if (v === undefined && o.default !== undefined && o.type === 'string') v = o.multiple ? [o.default] : o.default;
    if (v === undefined) v = o.type === 'boolean' ? false : o.multiple ? [] : undefined;
    if (o.required && (v === undefined || (Array.isArray(v) && v.length === 0))) throw new UsageError(`--${name} is required`);
    values[name] = v;
  }
  const max = spec.positionals?.length ?? 0;
  if (parsed.positionals.length > max) throw new UsageError(`unexpected argument '${parsed.positionals[max]}'`);
  if (parsed.positionals.length < (spec.requiredPositionals ?? 0)) throw new UsageError(`missing ${spec.positionals![parsed.positionals.length]}`);
  return { values: values as OptionValues<O>, positionals: parsed.positionals };
}

/** Builds a leaf command named `path` (e.g. `ddn did resolve`). */
export function leaf<O extends OptionDefs>(path: string, spec: LeafSpec<O>): CliCommand {
  const help = (): string =>
    `usage: ${path} ${spec.synopsis}\n\n${spec.description ?? spec.summary}\n\noptions:\n${optionHelp(spec.options)}\n\n` +
    'Prints one JSON result on stdout; progress goes to stderr. Exit status: 0 success, 1 failure, 2 timeout.\n';
  return {
    summary: spec.summary,
    async run(args: string[], io: CliIo): Promise<number> {
      if (args.includes('--help') || args.includes('-h')) {
        io.stderr(help());
        return 0;
      }
      const ctx: CommandContext = { io, info: (line) => io.stderr(`${line}\n`) };
      try {
        const { values, positionals } = parse(spec, args, io.env);
        const result = await spec.run(ctx, values, positionals);
        printResult(io, result);
        return spec.exitCode?.(result) ?? 0;
      } catch (e) {
        const result = errorResult(e);
        printResult(io, result);
        io.stderr(`${path}: ${String(result.message)}\n`);
        if (e instanceof UsageError) io.stderr(`run '${path} --help' for the options\n`);
        return isTimeout(e) ? 2 : 1;
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
        io.stderr(usage());
        return 0;
      }
      const child = name !== undefined && Object.hasOwn(children, name) ? children[name] : undefined;
      if (child === undefined) {
        const e = new UsageError(name === undefined ? `${path}: a command is required` : `unknown command '${path} ${name}'`);
        printResult(io, errorResult(e));
        io.stderr(`${e.message}\n${usage()}`);
        return 1;
      }
      return child.run(rest, io);
    },
  };
}
