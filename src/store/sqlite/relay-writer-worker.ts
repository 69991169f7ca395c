/**
 * The Relay store's writer thread (`writer-thread.ts` serves it): its own connection to `relay.sqlite` (WAL,
 * `synchronous = FULL`), so a staged chunk's or a node nonce's fsync'd commit never holds up the Relay's event loop.
 */
import { workerData } from 'node:worker_threads';
import { nameThisThread } from '../../base/module-worker.js';
import { openSqlite } from './database.js';
import { RELAY_MIGRATIONS } from './relay-schema.js';
import { relayOpBytes, relayOpRunner, type RelayWriteOp } from './relay-write-ops.js';
import { RelayWrites } from './relay-writes.js';
import { serveWriterThread, type WriterThreadData } from './writer-thread.js';

nameThisThread('ddn-relay-w');
const data = workerData as WriterThreadData;
const db = openSqlite(data.path, RELAY_MIGRATIONS, 'relay', { synchronous: 'FULL' });
serveWriterThread<RelayWriteOp>({ db, data, runner: relayOpRunner(new RelayWrites(db)), bytesOf: relayOpBytes });
