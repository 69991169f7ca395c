/** What every figure gets: the settings of this run, the load generator, the running service and the recipients. */
import type { BenchRecipient } from './fixtures.js';
import type { LoadGenerator } from './loadgen-client.js';
import type { LoadJob, LoadResult } from './jobs.js';
import type { ServiceProcess } from './service.js';

export interface Settings {
  quick: boolean;
  /** Extra runs of a measurement during which other work used more than `otherCpuLimit` cores. */
  retries: number;
  otherCpuLimit: number;
  /** Measured seconds per load figure. */
  durationS: number;
  /** Measured seconds of a hello-world reference run beside a figure. */
  pairedS: number;
  warmupS: number;
  /** Concurrent connections of the small-request figures (and the hello-world reference). */
  connections: number;
  /** Concurrent connections of the 1 MiB store figure. */
  bigConnections: number;
  /** Envelopes already stored for the growth figure. */
  prefillRows: number;
  /** Seconds of each single-thread micro reference. */
  microSeconds: number;
  /** Envelopes in the mailbox that the retrieval figures read. */
  mailboxSize: number;
  envelopeBytes: number;
  bigEnvelopeBytes: number;
  largeEnvelopeBytes: number;
}

export interface Recipients {
  store: BenchRecipient;
  retrieval: BenchRecipient;
  relay: BenchRecipient;
  large: BenchRecipient;
}

export interface BenchContext {
  settings: Settings;
  gen: LoadGenerator;
  /** The service now running (the growth figure restarts it). */
  service: ServiceProcess;
  profile: string;
  recipients: Recipients;
  log(msg: string): void;
  /** Waits (bounded) for other work on the machine to finish before a measurement, and records how busy it was. */
  settle(what: string): Promise<void>;
  /**
   * Runs a load job, counting the CPU of `pids` (the processes under test). A run during which other work used
   * the machine noticeably is repeated (full mode), and the quietest run is kept. `probe` (a running total, e.g.
   * PostgreSQL's CPU milliseconds) is read around each run; the kept run's growth is its `probe_delta`.
   */
  load(job: LoadJob, pids: number | readonly number[], probe?: () => number): Promise<LoadResult>;
}

/** Which same-run reference a figure is divided by. */
export type ReferenceId =
  | 'hello_world_rps'
  | 'sqlite_commits_per_s'
  | 'ed25519_verifies_per_s'
  | 'envelope_bytes'
  | 'empty_store'
  /** Another line of the same figure (`referenceValue`), e.g. the hot mailbox's PostgreSQL against its SQLite. */
  | 'same_run_line';

/** A reference measured beside one figure (or a group of figures measured together). */
export interface PairedReference {
  before: number;
  after: number;
  /** The hello-world loads, for the load details. */
  loads?: LoadResult[];
}

/** A floor reference (`floors.ts`) measured beside a figure: the same load against the least work it needs. */
export interface Floor {
  rate: number;
  /** What the floor server does per request. */
  what: string;
  load: LoadResult;
}

export interface Target {
  op: '>=' | '<=';
  ratio: number;
}

/** One reported figure. `value` null = unavailable (with the reason). */
export interface Figure {
  id: string;
  title: string;
  value: number | null;
  unit: string;
  unavailable?: string;
  /** The reference the ratio is taken against, and the target on that ratio (when the issue sets one). */
  reference?: ReferenceId;
  /** For `empty_store` and `same_run_line`: the reference value itself (the same workload on an empty store; the line of the same run it is measured against). */
  referenceValue?: number;
  target?: Target;
  /**
   * Its reference measured again right before and right after it: the machine's speed drifts within a run (a
   * shared host), so the ratio is taken against the mean of these two instead of the run-wide value.
   */
  paired?: PairedReference;
  /** The floor of this figure, measured right after it (same load job). */
  floor?: Floor;
  ratio?: number;
  pass?: boolean;
  /** Other numbers worth reading beside the value (latency, CPU, …). */
  extra?: Record<string, number | string>;
  load?: LoadResult;
  details?: Record<string, unknown>;
  /** With `--repeat N`: every run's value and ratio, in run order (this figure is the median run). */
  repeats?: RepeatedRuns;
}

/** The runs of a repeated figure (`bench/repeats.ts`). */
export interface RepeatedRuns {
  values: (number | null)[];
  ratios: (number | null)[];
}

export const enc = encodeURIComponent;
