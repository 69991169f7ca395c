/** What `ddn receive` reports at its end: one sweep's files and errors, or a whole `--follow` session's, bounded. */
import type { ReceiveFailure, ReceiveReport, ReceivedFile, SuspendedFile } from '../client/file-receiver.js';

/** The files a report lists: the latest ones (`received` counts every file written). */
export const REPORTED_FILES = 1_000;
/** The distinct errors a report lists (each was also printed as it happened). */
export const REPORTED_ERRORS = 100;

/** The aggregated result of a run (one sweep, or a whole `--follow` session). */
export interface ReceiveResult {
  did: string;
  /** Every file written in the run. */
  received: number;
  /** The latest {@link REPORTED_FILES} of them. */
  files: ReceivedFile[];
  /** The first {@link REPORTED_ERRORS} distinct errors. */
  errors: ReceiveFailure[];
  caches: ReceiveReport['caches'];
  /** Files whose download stopped part-way; the next run continues them. */
  suspended?: SuspendedFile[];
}

/**
 * Adds sweeps' and live deliveries' reports to one result that stays bounded however long a `--follow` session
 * runs: the latest files, the first distinct errors (an error repeated by every sweep is listed once).
 */
export class ReceiveTally {
  readonly result: ReceiveResult;
  private readonly seenErrors = new Set<string>();

  constructor(did: string) {
    this.result = { did, received: 0, files: [], errors: [], caches: [] };
  }

  add(r: ReceiveReport): void {
    const into = this.result;
    into.received += r.files.length;
    into.files.push(...r.files);
    if (into.files.length > REPORTED_FILES) into.files.splice(0, into.files.length - REPORTED_FILES);
    const done = new Set(r.files.map((f) => f.message_group_id ?? f.message_ids[0]));
    const suspended = [...(into.suspended ?? []).filter((f) => !done.has(f.message_key)), ...(r.suspended ?? [])];
    if (suspended.length > 0) into.suspended = suspended;
    else delete into.suspended;
    for (const e of r.errors) {
      if (into.errors.length >= REPORTED_ERRORS) break;
      const key = JSON.stringify(e);
      if (this.seenErrors.has(key)) continue;
      this.seenErrors.add(key);
      into.errors.push(e);
    }
    if (r.caches.length > 0) into.caches = r.caches;
  }
}
