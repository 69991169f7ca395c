/**
 * `bench/pg-write-cpu.ts --steps`: loaded into the Directory processes (`node --import`), it counts the shared
 * ledger's steps and measures the CPU (`process.cpuUsage`, the whole process during the synchronous step) of those
 * that run synchronously — a check of an admission batch, another process's pending rows run on this pool
 * (`adoptPending`), a block built, committed, or copied from another process (`applyReplicatedBlock`) — and counts
 * the asynchronous ones (catch-ups, admission statements, blocks produced). Every 100 ms it writes the running
 * totals to `$DDN_BENCH_STEPS_DIR/<pid>.json` (written aside and renamed: a reader never sees half a file). Not part
 * of ddn: it patches the classes of the tree's dist/ the process runs from.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = process.env.DDN_BENCH_STEPS_DIR;
if (dir !== undefined) {
  mkdirSync(dir, { recursive: true });
  /** step → how many times, CPU µs (synchronous steps), rows (transactions it handled) */
  const steps = {};
  const count = (name, us, rows) => {
    const s = (steps[name] ??= { n: 0, us: 0, rows: 0 });
    s.n++;
    s.us += us;
    s.rows += rows;
  };
  const cpuUs = () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  const timed = (proto, name, rowsOf = () => 0) => {
    const f = proto[name];
    proto[name] = function (...args) {
      const t = cpuUs();
      try {
        return f.apply(this, args);
      } finally {
        count(name, cpuUs() - t, rowsOf(args));
      }
    };
  };
  const counted = (proto, name) => {
    const f = proto[name];
    proto[name] = function (...args) {
      count(name, 0, 0);
      return f.apply(this, args);
    };
  };
  const dist = (p) => pathToFileURL(join(process.cwd(), 'dist', p)).href;
  const { Ledger } = await import(dist('ledger/chain.js'));
  const { PgLedgerSync } = await import(dist('store/postgres/ledger-sync.js'));
  timed(Ledger.prototype, 'adoptPending', (a) => a[0].length);
  timed(Ledger.prototype, 'applyReplicatedBlock', (a) => a[2].length);
  timed(Ledger.prototype, 'adoptBatch');
  timed(Ledger.prototype, 'buildBlock');
  timed(Ledger.prototype, 'commitBuilt');
  timed(PgLedgerSync.prototype, 'checkBatch', (a) => a[1].length);
  for (const name of ['catchUpWithPool', 'admitOnOwnView', 'admitUnderLock', 'produceBlock']) counted(PgLedgerSync.prototype, name);
  const file = join(dir, `${process.pid}.json`);
  setInterval(() => {
    writeFileSync(`${file}.tmp`, JSON.stringify(steps));
    renameSync(`${file}.tmp`, file);
  }, 100).unref();
}
