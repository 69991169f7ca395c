/**
 * The leader shape (issue 39, item 5): two Directory processes (`ddn serve --roles directory` children) on one
 * PostgreSQL ledger, the one that does not produce the blocks handing its writes to the one that does
 * (src/http/hand-over.ts). Writes through the follower are answered by the producer, byte for byte, and read back
 * at once through the follower; the client's rate budget is counted once, by its own address, and a forged hand-over
 * header buys nothing; the producer killed with SIGKILL while writes stream through the follower loses none, and
 * each is applied once. Registers only when DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { DirectoryHarness } from '../support/directory-harness.js';
import { assertAccepted, assertError, prepareRegistration, registrationSubmitBody, type Reply } from '../support/directory-flows.js';
import { overHttp, resolves, twoDirectories } from '../support/directory-over-http.js';
import { freshPgSchema, ledgerLeaderPid, PG_URL } from '../support/pg.js';
import { serveScratch, type ServeProcess } from '../support/serve-process.js';
import { waitFor as poll } from '../support/wait.js';

const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) => poll(what, probe, { everyMs: 50, ignoreErrors: true });

const { tempDir, children } = serveScratch('ddn-pg-hand-over-');

type FreshPgSchema = Awaited<ReturnType<typeof freshPgSchema>>;

/** `ddn_ledger_hand_overs_total` of process `p`, by outcome. */
async function handOvers(p: ServeProcess): Promise<Record<string, number>> {
  const text = await (await fetch(`${p.urls.directory!}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^ddn_ledger_hand_overs_total\{outcome="(\w+)"\} (\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/** The two processes once one produces and the other knows where to hand its writes: [producer, follower]. */
async function producerAndFollower(pg: FreshPgSchema, db: readonly string[]): Promise<[ServeProcess, ServeProcess]> {
  const [d1, d2] = await twoDirectories(tempDir, children, db);
  const leader = await waitFor('a ledger leader', () => ledgerLeaderPid(pg));
  const producer = leader === d1.pid ? d1 : d2;
  const follower = producer === d1 ? d2 : d1;
  await waitFor('the producer published', async () => {
    const r = await pg.pool.query("SELECT 1 FROM ledger_meta WHERE k = 'producer'");
    return r.rows.length === 1 ? true : undefined;
  });
  return [producer, follower];
}

/** Registers DID `seed` through `h` (prepare, sign, submit): the DID and the submit's reply. */
async function register(h: DirectoryHarness, seed: number): Promise<{ did: string; res: Reply }> {
  const { did, key, prepared } = await prepareRegistration(h, seed);
  return { did, res: await h.call('POST', '/register-did', registrationSubmitBody(prepared, key)) };
}

/** Stops every child and drops the schema. */
async function cleanUp(pg: FreshPgSchema): Promise<void> {
  for (const c of children.splice(0)) {
    c.proc.kill('SIGTERM');
    await c.exited;
  }
  await pg.drop();
}

if (PG_URL) {
  describe('writes handed to the producer between Directory processes on one PostgreSQL', () => {
    it('answers writes through the follower with the producer’s answers, reads them back there, and loses none when the producer is killed', async () => {
      const pg = await freshPgSchema();
      try {
        const db = ['--db', pg.url, '--db-schema', pg.schema, '--log-level', 'silent', '--block-time-ms', '1'];
        const [producer, follower] = await producerAndFollower(pg, db);
        const hf = overHttp(follower);

        // Registrations through the follower: each handed over, and visible through the follower right after its 202.
        for (let seed = 10; seed < 22; seed++) {
          const { did, res } = await register(hf, seed);
          assertAccepted(res);
          const status = await hf.call('GET', `/registration-status/${encodeURIComponent(did)}`);
          assert.equal(status.status, 200, `${did} is known to the follower right after its 202: ${JSON.stringify(status)}`);
        }
        const [byFollower, byProducer] = await Promise.all([handOvers(follower), handOvers(producer)]);
        assert.equal(byFollower.handed, 12, `the follower handed every write: ${JSON.stringify(byFollower)}`);
        assert.equal(byProducer.taken, 12, `the producer took every write: ${JSON.stringify(byProducer)}`);
        assert.equal(byProducer.handed ?? 0, 0, 'the producer hands nothing on');

        // A refused write: the same status, media type and bytes through the follower as from the producer itself.
        const { key, prepared } = await prepareRegistration(hf, 30);
        const bad = JSON.stringify({ ...registrationSubmitBody(prepared, key), signature: `0x${'00'.repeat(64)}` });
        const send = (p: ServeProcess) =>
          fetch(`${p.urls.directory!}/register-did`, { method: 'POST', body: bad, headers: { 'content-type': 'application/json' } });
        const [viaFollower, direct] = await Promise.all([send(follower), send(producer)]);
        assert.equal(viaFollower.status, direct.status);
        assert.ok(viaFollower.status >= 400 && viaFollower.status < 500, `refused: ${viaFollower.status}`);
        assert.equal(viaFollower.headers.get('content-type'), direct.headers.get('content-type'));
        assert.equal(viaFollower.headers.get('x-ddn-hand-over'), null, 'the hop’s mark is not relayed');
        assert.deepEqual(Buffer.from(await viaFollower.arrayBuffer()), Buffer.from(await direct.arrayBuffer()));
        assert.equal((await handOvers(follower)).handed, 13);

        // The producer killed with SIGKILL while registrations stream through the follower: every one is answered
        // 202 (a hop that fails leaves the write to the follower), becomes final there, and is applied once.
        const admitted: string[] = [];
        const refused: Reply[] = [];
        let nextSeed = 100;
        const worker = async (): Promise<void> => {
          while (nextSeed < 160) {
            const r = await register(hf, nextSeed++);
            if (r.res.status === 202) admitted.push(r.did);
            else refused.push(r.res);
          }
        };
        const stream = Promise.all(Array.from({ length: 6 }, worker));
        await waitFor('hand-overs under way', async () => (admitted.length >= 10 ? true : undefined));
        producer.proc.kill('SIGKILL');
        await producer.exited;
        await stream;
        assert.deepEqual(refused, [], 'no write through the follower was refused');
        assert.equal(admitted.length, 60);
        await waitFor('the follower produces', async () => ((await ledgerLeaderPid(pg)) === follower.pid ? true : undefined));
        for (const d of admitted) await waitFor(`${d} is final`, async () => ((await resolves(hf, d)) ? true : undefined));
        const pending = await pg.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM ledger_txs WHERE status = 'pending'");
        assert.equal(pending.rows[0]!.n, 0, 'nothing is left in the shared pool');
        const twice = await pg.pool.query('SELECT tx_hash FROM ledger_txs WHERE block_number IS NOT NULL GROUP BY tx_hash HAVING count(*) > 1');
        assert.deepEqual(twice.rows, []);
        // and the survivor, now the producer, admits its own writes
        assertAccepted((await register(hf, 200)).res);
      } finally {
        await cleanUp(pg);
      }
    });

    it('counts a handed write once against its client’s budget, and a forged hand-over header buys nothing', async () => {
      const pg = await freshPgSchema();
      try {
        const db = ['--db', pg.url, '--db-schema', pg.schema, '--log-level', 'silent', '--block-time-ms', '1', '--rate-limit-registration', '6/1h'];
        const [producer, follower] = await producerAndFollower(pg, db);
        const hf = overHttp(follower);
        // six registrations through the follower (prepare and submit count alike): three DIDs, each counted once
        for (let seed = 10; seed < 13; seed++) assertAccepted((await register(hf, seed)).res);
        assert.equal((await handOvers(follower)).handed, 3);
        // the seventh request of this client is over its budget, wherever it goes
        assertError(await hf.call('POST', '/register-did/prepare', {}), 429, 'rate_limited');
        const forged = await fetch(`${producer.urls.directory!}/register-did/prepare`, {
          method: 'POST',
          body: '{}',
          headers: { 'content-type': 'application/json', 'x-ddn-hand-over': 'forged', 'x-ddn-handed-for': '203.0.113.9' },
        });
        assert.equal(forged.status, 429, 'a forged hand-over is counted against the sender’s own address');
        assert.equal(forged.headers.get('x-ddn-hand-over'), null);
        assert.equal((await handOvers(producer)).taken, 3);
      } finally {
        await cleanUp(pg);
      }
    });
  });
}
