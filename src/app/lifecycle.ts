/**
 * The one lifecycle of a node's parts. Each part is a {@link Component} that says how it starts and how it stops.
 * Components are added in dependency order — a factory takes the components it needs as arguments, so they were
 * added before it — started in that order and stopped in the reverse one. A start that fails stops what already
 * started, in reverse, and rethrows. `stop()` is idempotent.
 *
 * A component without `start` is running from the moment it is added: its factory opened it (a database, a lock)
 * because the parts built after it need it open. A component with `start` waits for {@link Lifecycle.start}
 * (listening sockets, timers, background loops).
 */

/** One part of a node. */
export interface Component {
  /** For logs and errors. */
  readonly name: string;
  /** Starts the part's work; none: running once added. */
  start?(): void | Promise<void>;
  /** Stops it; called at most once, and only when it started. */
  stop?(): void | Promise<void>;
}

/** A component's stop failed (the first failure; every other stop still ran). */
export class ComponentStopError extends Error {
  constructor(
    readonly component: string,
    override readonly cause: unknown,
  ) {
    super(`stopping ${component} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'ComponentStopError';
  }
}

interface Entry {
  readonly component: Component;
  started: boolean;
}

/** Starts components in the order they were added and stops them in reverse. */
export class Lifecycle {
  readonly #entries: Entry[] = [];
  #starting: Promise<void> | undefined;
  /** The start of the component being started now. */
  #inFlight: Promise<unknown> | undefined;
  #stopping: Promise<void> | undefined;

  /** @param onStopError told about every stop that fails while a failed start is being undone */
  constructor(private readonly onStopError: (err: unknown) => void = () => {}) {}

  /** Adds `component` after every component added before it; returns it. Refused once stopping. */
  add<T extends Component>(component: T): T {
    if (this.#stopping !== undefined) throw new Error(`cannot add ${component.name}: the lifecycle is stopping`);
    this.#entries.push({ component, started: component.start === undefined });
    return component;
  }

  /** Whether `name` is running (added without a start, or started, and not stopped yet). */
  isRunning(name: string): boolean {
    return this.#stopping === undefined && this.#entries.some((e) => e.component.name === name && e.started);
  }

  /**
   * Starts every component not started yet, in the order they were added. On a failure, stops every running
   * component in reverse and rethrows the start's error. Once only.
   */
  start(): Promise<void> {
    if (this.#starting !== undefined) return Promise.reject(new Error('the lifecycle was started already'));
    if (this.#stopping !== undefined) return Promise.reject(new Error('the lifecycle is stopping'));
    this.#starting = this.#startAll();
    return this.#starting;
  }

  async #startAll(): Promise<void> {
    for (const entry of this.#entries) {
      if (entry.started) continue;
      try {
        const starting = Promise.resolve(entry.component.start?.());
        this.#inFlight = starting;
        await starting;
        entry.started = true;
      } catch (err) {
        await this.stop().catch(this.onStopError);
        throw err;
      } finally {
        this.#inFlight = undefined;
      }
      // stop() was called meanwhile: it waited for this start and stops this component with the others
      if (this.#stopping !== undefined) throw new Error(`the lifecycle stopped while ${entry.component.name} was starting`);
    }
  }

  /**
   * Stops every running component in the reverse order of their addition; every stop runs, and the first failure
   * is rethrown as a {@link ComponentStopError}. Idempotent: later calls return the first call's promise.
   */
  stop(): Promise<void> {
    this.#stopping ??= this.#stopAll();
    return this.#stopping;
  }

  async #stopAll(): Promise<void> {
    // a start in flight finishes first (its component is then stopped with the others)
    await this.#inFlight?.catch(() => {});
    let failure: ComponentStopError | undefined;
    for (const entry of [...this.#entries].reverse()) {
      if (!entry.started) continue;
      entry.started = false;
      try {
        await entry.component.stop?.();
      } catch (err) {
        failure ??= new ComponentStopError(entry.component.name, err);
      }
    }
    if (failure !== undefined) throw failure;
  }
}
