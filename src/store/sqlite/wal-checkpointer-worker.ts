/**
 * The WAL checkpointer's thread (see `wal-checkpointer.ts`): its own connection copies committed WAL frames into
 * the database file every `intervalMs`, concurrently with the writer. A passive checkpoint never resets the WAL
 * while the writer keeps committing, so past `restartFrames` it first catches up passively, then runs a RESTART
 * checkpoint, which holds the writer back only for the frames left and lets its next transaction rewind the WAL.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { CheckpointerData, CheckpointerReport } from './wal-checkpointer.js';

interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
}

const port = parentPort;
if (port === null) throw new Error('wal-checkpointer-worker runs as a worker thread');
const data = workerData as CheckpointerData;
const db = new Database(data.path);
// a RESTART waits for the writer's transaction in progress, and for readers of older snapshots
db.pragma('busy_timeout = 5000');
db.pragma('synchronous = FULL');

const checkpoint = (mode: 'PASSIVE' | 'RESTART') => (db.pragma(`wal_checkpoint(${mode})`) as CheckpointRow[])[0];

let lastCheckpointed = -1;

const pass = (): void => {
  let row = checkpoint('PASSIVE');
  let restarted = false;
  if (row.log >= data.restartFrames) {
    // what the writer committed during the first pass, copied without blocking it, leaves RESTART a short tail
    checkpoint('PASSIVE');
    row = checkpoint('RESTART');
    restarted = row.busy === 0;
  }
  // an idle WAL reports the same frames every pass: the parent hears only of progress
  if (!restarted && row.checkpointed === lastCheckpointed) return;
  lastCheckpointed = row.checkpointed;
  const report: CheckpointerReport = { type: 'pass', log: row.log, checkpointed: row.checkpointed, restarted };
  port.postMessage(report);
};

const timer = setInterval(() => {
  try {
    pass();
  } catch (err) {
    // a failed pass (disk full, I/O error) is retried next time; meanwhile the writer's own bound applies
    const report: CheckpointerReport = { type: 'failed', message: err instanceof Error ? err.message : String(err) };
    port.postMessage(report);
  }
}, data.intervalMs);

port.on('message', (m: 'stop') => {
  if (m !== 'stop') return;
  clearInterval(timer);
  db.close();
  port.close();
});
