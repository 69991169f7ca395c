/**
 * The WAL checkpointer's thread (see `wal-checkpointer.ts`): its own connection copies committed WAL frames into
 * the database file every `intervalMs`, and at once when the writer asks (`'pass'`), concurrently with the writer.
 * Past `rewindFrames` it runs a second pass at once and tells its parent, the writer, that the WAL is due to rewind
 * (see `WalCheckpointer.afterCommit`).
 */
import { nameThisThread } from '../../base/module-worker.js';
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { CheckpointerCommand, CheckpointerData, CheckpointerReport } from './wal-checkpointer.js';

interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
}

const port = parentPort;
if (port === null) throw new Error('wal-checkpointer-worker runs as a worker thread');
nameThisThread('ddn-checkpoint');
const data = workerData as CheckpointerData;
const db = new Database(data.path);
db.pragma('synchronous = FULL');

const checkpoint = () => (db.pragma('wal_checkpoint(PASSIVE)') as CheckpointRow[])[0];

/** Frames the last reported pass had copied: a pass that copied none is not a pass that copied frames (metrics). */
let lastCheckpointed = 0;

const pass = (): void => {
  let row = checkpoint();
  const rewindDue = row.log >= data.rewindFrames;
  // what the writer committed during the first pass, copied now without blocking it, leaves the writer a short tail
  if (rewindDue) row = checkpoint();
  // an idle WAL reports the same frames every pass: the parent hears only of progress
  if (!rewindDue && row.checkpointed === lastCheckpointed) return;
  lastCheckpointed = row.checkpointed;
  const report: CheckpointerReport = { type: 'pass', log: row.log, checkpointed: row.checkpointed, rewindDue };
  port.postMessage(report);
};

const tryPass = (): void => {
  try {
    pass();
  } catch (err) {
    // a failed pass (disk full, I/O error) is retried next time; meanwhile the writer's own bound applies
    const report: CheckpointerReport = { type: 'failed', message: err instanceof Error ? err.message : String(err) };
    port.postMessage(report);
  }
};

const timer = setInterval(tryPass, data.intervalMs);

port.on('message', (m: CheckpointerCommand) => {
  if (m === 'pass') {
    tryPass();
    return;
  }
  clearInterval(timer);
  db.close();
  port.close();
});
