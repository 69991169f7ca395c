/**
 * `npx tsx bench/hot-mailbox-db.ts [--processes 1] [--concurrency 32] [--seconds 5]` (needs `DDN_BENCH_PG_URL`;
 * the database's `track_functions` at `pl` or `all` for the stores per call): the hot mailbox's database side
 * without HTTP (issue 39 item 1). `--processes` child processes, each with its own PgMailboxStore (a pool of its
 * own, as a Cache process), store fresh 1 KiB envelopes into ONE recipient, `--concurrency` stores in flight in
 * all (split evenly), each with a node-request nonce claim and a quota, as a Relay's stores carry, for
 * `--seconds`, on a fresh schema dropped afterwards.
 *
 * Prints one JSON line: stores/s, PostgreSQL CPU per store (the backends of the database, /proc), the store
 * processes' CPU per store, stores per `cache_put_new` or `cache_put_leased` call (`pg_stat_user_functions`), and PostgreSQL's wait
 * events sampled every 20 ms (mean backends in each; `CPU` is active without a wait). Compare trees by running it
 * from each worktree in turn (A B B A): the CPU per store survives a loaded machine better than the rate.
 */
import { fork } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openPgPool } from '../src/store/postgres/pool.js';
import { PgMailboxStore } from '../src/store/postgres/mailbox-store.js';
import { cpuMsBetween, cpuMsByName } from './proc.js';

const URL_ = process.env.DDN_BENCH_PG_URL;
if (URL_ === undefined) throw new Error('set DDN_BENCH_PG_URL');
const DID = 'did:platform:2222222222222222';
const ENVELOPE = Buffer.alloc(1024, 120);

interface Done {
  n: number;
  cpuMs: number;
}

/** A child: opens the store, waits for `go`, stores for `seconds`, reports, waits for `bye` (its backends stay up until the parent has read their CPU). */
async function child(schema: string, concurrency: number, seconds: number): Promise<void> {
  const s = await PgMailboxStore.open(await openPgPool({ url: URL_!, schema }), {}, true);
  const next = () => new Promise<void>((r) => process.once('message', () => r()));
  process.send!('ready');
  await next();
  let n = 0;
  const until = Date.now() + seconds * 1000;
  const c0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < until) {
        const id = randomUUID();
        const now = Date.now();
        await s.put({
          entry: {
            messageId: id,
            recipientDid: DID,
            contentHash: `h-${id}`,
            storedAtMs: now,
            expiresAtMs: now + 3_600_000,
            maxTtlSeconds: 172_800,
            appliedTtlSeconds: 3_600,
            tag: null,
            applicationId: null,
            chunk: null,
            sizeBytes: ENVELOPE.length,
            provenance: null,
            envelope: ENVELOPE,
          },
          nowMs: now,
          chunkWindowMs: 3_600_000,
          claim: { scope: 'node-request', did: 'did:platform:4444444444444444', keyId: 'k', nonce: randomUUID(), expiresAtMs: now + 300_000 },
          quotaBytes: 1e12,
        });
        n++;
      }
    }),
  );
  const c = process.cpuUsage(c0);
  process.send!({ n, cpuMs: (c.user + c.system) / 1000 } satisfies Done);
  await next();
  await s.close();
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { processes: { type: 'string', default: '1' }, concurrency: { type: 'string', default: '32' }, seconds: { type: 'string', default: '5' } },
  });
  const P = Number(values.processes);
  const C = Number(values.concurrency);
  const D = Number(values.seconds);
  const schema = `hotdb_${randomBytes(4).toString('hex')}`;
  const store = await PgMailboxStore.open(await openPgPool({ url: URL_!, schema }));
  const kids = await Promise.all(
    Array.from({ length: P }, async () => {
      const k = fork(fileURLToPath(import.meta.url), ['child', schema, String(Math.round(C / P)), String(D)], { execArgv: ['--import', 'tsx'] });
      await new Promise((r) => k.once('message', r));
      return k;
    }),
  );
  const dbName = new URL(URL_!).pathname.slice(1) || 'postgres';
  const admin = new pg.Client({ connectionString: URL_ });
  await admin.connect();
  const adminPid = (await admin.query<{ p: number }>('SELECT pg_backend_pid() AS p')).rows[0]!.p;
  const calls = async () => {
    await admin.query('SELECT pg_stat_clear_snapshot()');
    const r = await admin.query<{ c: string }>(
      `SELECT coalesce(sum(calls), 0) AS c FROM pg_stat_user_functions WHERE funcname IN ('cache_put_new', 'cache_put_leased') AND schemaname = $1`,
      [schema],
    );
    return Number(r.rows[0]!.c);
  };
  const calls0 = await calls();
  const pg0 = cpuMsByName('postgres', ` ${dbName} `);
  const t0 = Date.now();
  const results = kids.map((k) => new Promise<Done>((r) => k.once('message', (m) => r(m as Done))));
  for (const k of kids) k.send('go');
  const waits = new Map<string, number>();
  let samples = 0;
  let done = false;
  const sampler = (async () => {
    while (!done) {
      const r = await admin.query<{ k: string; n: string }>(
        `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS k, count(*) AS n FROM pg_stat_activity
         WHERE datname = $1 AND backend_type = 'client backend' AND state = 'active' AND pid <> $2 GROUP BY 1`,
        [dbName, adminPid],
      );
      samples++;
      for (const x of r.rows) waits.set(x.k, (waits.get(x.k) ?? 0) + Number(x.n));
      await new Promise((res) => setTimeout(res, 20));
    }
  })();
  const got = await Promise.all(results);
  const wall = (Date.now() - t0) / 1000;
  // the sampler's own backend is in the sum: it is one of the database's backends
  const pgMs = cpuMsBetween(pg0, cpuMsByName('postgres', ` ${dbName} `));
  done = true;
  await sampler;
  for (const k of kids) k.send('bye');
  await new Promise((r) => setTimeout(r, 700)); // the statistics of the children's backends reach the shared counters
  const n = got.reduce((a, g) => a + g.n, 0);
  const perCall = n / ((await calls()) - calls0);
  console.log(
    JSON.stringify({
      processes: P,
      concurrency: C,
      load: +loadavg()[0]!.toFixed(2),
      stores_per_s: Math.round(n / wall),
      postgres_us_per_store: Math.round((pgMs * 1000) / n),
      stores_us_per_store: Math.round((got.reduce((a, g) => a + g.cpuMs, 0) * 1000) / n),
      stores_per_call: Number.isFinite(perCall) ? +perCall.toFixed(1) : null,
      waits: Object.fromEntries([...waits].map(([k, v]) => [k, +(v / samples).toFixed(2)])),
    }),
  );
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  await admin.end();
  await store.close();
}

if (process.argv[2] === 'child') await child(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]));
else await main();
