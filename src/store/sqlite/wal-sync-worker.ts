/**
 * The WAL fsync thread (`ddn-wal-sync`, see `wal-sync.ts`). It sleeps on the shared request counter; for each new
 * request it fsyncs the WAL, records the error's errno if any, and publishes the request's number as done, which
 * wakes its parent. At the first request it syncs the WAL's directory, then opens the WAL, whose descriptor it keeps.
 * A negative request ends it.
 */
import { closeSync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { workerData } from 'node:worker_threads';
import { nameThisThread } from '../../base/module-worker.js';
import { SLOT, type WalSyncData } from './wal-sync.js';

nameThisThread('ddn-wal-sync');
const { walPath, shared } = workerData as WalSyncData;
const slots = new Int32Array(shared);

let fd: number | undefined;

/** The WAL's descriptor; its directory is synced first, so that the file's entry is as durable as its frames. */
function wal(): number {
  if (fd !== undefined) return fd;
  const dir = openSync(dirname(walPath), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
  fd = openSync(walPath, 'r');
  return fd;
}

let seen = 0;
for (;;) {
  Atomics.wait(slots, SLOT.request, seen);
  const request = Atomics.load(slots, SLOT.request);
  if (request < 0) break;
  seen = request;
  try {
    fsyncSync(wal());
    Atomics.store(slots, SLOT.errno, 0);
  } catch (err) {
    // an errno is negative (-5: EIO); anything else (no errno) is reported as -1
    const errno = (err as NodeJS.ErrnoException).errno;
    Atomics.store(slots, SLOT.errno, typeof errno === 'number' && errno < 0 ? errno : -1);
  }
  Atomics.store(slots, SLOT.done, request);
  Atomics.notify(slots, SLOT.done);
}
if (fd !== undefined) closeSync(fd);
