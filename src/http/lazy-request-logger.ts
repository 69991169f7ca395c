/**
 * A request's logger (`ctx.log`) made only when it is used: most requests log nothing, so making a child logger
 * (the `reqId` binding) for each would be wasted. This one stands in for the child and creates it
 * (`parent.child(bindings)`) on the first line at an enabled level, so every line still carries `reqId`.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, LogFn } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/** The pino method that says whether a level is logged (fastify's logger type does not name it). */
type LevelCheck = { isLevelEnabled?: (level: string) => boolean };

export class LazyRequestLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  /** The child logger, made on first use. */
  private logger(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  /** Whether a line at `level` is written: asked of the parent until the child exists (a child starts at its parent's level). */
  private enabled(level: Level): boolean {
    if (this.made !== undefined || this.options.level !== undefined) return true;
    const check = (this.parent as LevelCheck).isLevelEnabled;
    return check === undefined || check.call(this.parent, level);
  }

  get level(): string {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger().level = level;
  }

  declare fatal: LogFn;
  declare error: LogFn;
  declare warn: LogFn;
  declare info: LogFn;
  declare debug: LogFn;
  declare trace: LogFn;
  declare silent: LogFn;

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger().child(bindings, options);
  }
}

for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const) {
  LazyRequestLogger.prototype[level] = function (this: LazyRequestLogger, ...args: unknown[]): void {
    const self = this as unknown as { enabled(level: Level): boolean; logger(): FastifyBaseLogger };
    if (self.enabled(level)) (self.logger()[level] as (...a: unknown[]) => void)(...args);
  } as LogFn;
}
LazyRequestLogger.prototype.silent = function (): void {} as LogFn;
