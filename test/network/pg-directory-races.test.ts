/**
 * Issue 27's races: two Directory processes (`ddn serve --roles directory` children) admitting into one ledger on
 * one PostgreSQL schema at the same time. The same DID and nonce through both at once: exactly one admitted,
 * the other 409 with its spec code. Different subjects through both at once: all admitted. The process that
 * produces the blocks killed with SIGKILL while it produces them back to back: no admission that got a 202 is
 * lost. Registers only when DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { DirectoryHarness } from '../support/directory-harness.js';
import {
  assertAccepted,
  assertError,
  kaOf,
  keyOf,
  prepareRegistration,
  prepareSigned,
  registrationSubmitBody,
  submit,
  type Reply,
} from '../support/directory-flows.js';
import { overHttp, resolves, twoDirectories } from '../support/directory-over-http.js';
import { freshPgSchema, ledgerLeaderPid, PG_URL } from '../support/pg.js';
import { serveScratch } from '../support/serve-process.js';
import { waitFor as poll } from '../support/wait.js';

const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) => poll(what, probe, { everyMs: 50, ignoreErrors: true });

const { tempDir, children } = serveScratch('ddn-pg-races-');

if (PG_URL) {
  describe('Directory admissions through two processes on one PostgreSQL', () => {
    it('admits one of two changes with the same DID and nonce, all changes of different subjects, and loses none when the producer is killed', async () => {
      const pg = await freshPgSchema();
      try {
        const db = ['--db', pg.url, '--db-schema', pg.schema, '--log-level', 'silent', '--block-time-ms', '1'];
        const [d1, d2] = await twoDirectories(tempDir, children, db);
        const [h1, h2] = [overHttp(d1), overHttp(d2)];
        const both = [h1, h2];

        /** Registers DID `seed` through `h` (prepare, sign, submit); the reply of the submit. */
        const register = async (h: DirectoryHarness, seed: number): Promise<{ did: string; res: Reply }> => {
          const { did, key, prepared } = await prepareRegistration(h, seed);
          return { did, res: await h.call('POST', '/register-did', registrationSubmitBody(prepared, key)) };
        };

        // Different subjects through both processes at once: every one admitted, and final everywhere.
        const seeds = Array.from({ length: 24 }, (_, i) => 10 + i);
        const registered = await Promise.all(seeds.map((seed, i) => register(both[i % 2]!, seed)));
        for (const r of registered) assertAccepted(r.res);
        for (const h of both) {
          for (const r of registered) await waitFor(`${r.did} resolves at every Directory`, async () => ((await resolves(h, r.did)) ? true : undefined));
        }

        // The same DID and document nonce through both at once, round after round: one 202, one 409 nonce_mismatch.
        const did = registered[0]!.did;
        const key = keyOf(seeds[0]!);
        for (let round = 0; round < 4; round++) {
          // Each process prepares from its own replica; the previous round's winner may be final at one and not
          // yet at the other, so prepare again until both offer the same nonce.
          const [a, b] = await waitFor(`both processes prepare round ${round} with one nonce`, async () => {
            const pair = await Promise.all([
              prepareSigned(h1, did, key, 'AddKeyAgreement', { key_agreement: kaOf(did, `ka-${round}-a`, 1) }),
              prepareSigned(h2, did, key, 'AddKeyAgreement', { key_agreement: kaOf(did, `ka-${round}-b`, 2) }),
            ]);
            return pair[0].request.nonce === pair[1].request.nonce ? pair : undefined;
          });
          assert.equal(a.request.nonce, b.request.nonce, 'both changes carry the same nonce');
          const [ra, rb] = await Promise.all([submit(h1, a), submit(h2, b)]);
          const winners = [ra, rb].filter((r) => r.status === 202);
          assert.equal(winners.length, 1, `exactly one admitted: ${JSON.stringify([ra, rb])}`);
          assertError(ra.status === 202 ? rb : ra, 409, 'nonce_mismatch');
        }
        // The same DID registered through both at once with different keys: one 202, one 409 did_already_exists.
        {
          const seed = 60;
          const [pa, pb] = await Promise.all([prepareRegistration(h1, seed), prepareRegistration(h2, seed, { key: keyOf(61) })]);
          const [ra, rb] = await Promise.all([
            h1.call('POST', '/register-did', registrationSubmitBody(pa.prepared, pa.key)),
            h2.call('POST', '/register-did', registrationSubmitBody(pb.prepared, pb.key)),
          ]);
          assert.equal([ra, rb].filter((r) => r.status === 202).length, 1, `exactly one admitted: ${JSON.stringify([ra, rb])}`);
          assertError(ra.status === 202 ? rb : ra, 409, 'did_already_exists');
        }

        // The producer killed with SIGKILL while registrations stream through both processes and blocks are made
        // back to back: every registration that got a 202 becomes final through the survivor.
        const leaderPid = () => ledgerLeaderPid(pg);
        const firstLeader = await waitFor('a ledger leader', leaderPid);
        const victim = firstLeader === d1.pid ? d1 : d2;
        const survivor = victim === d1 ? h2 : h1;
        assert.ok([d1.pid, d2.pid].includes(firstLeader), 'one of the two Directory processes leads');
        const admitted: string[] = [];
        let nextSeed = 100;
        let killed = false;
        const worker = async (): Promise<void> => {
          while (nextSeed < 160) {
            const seed = nextSeed++;
            const via = killed ? survivor : both[seed % 2]!;
            try {
              const r = await register(via, seed);
              if (r.res.status === 202) admitted.push(r.did);
            } catch {
              // the killed process refuses connections: this one is not admitted, the stream goes on
            }
          }
        };
        const stream = Promise.all(Array.from({ length: 6 }, worker));
        await waitFor('admissions under way', async () => (admitted.length >= 10 ? true : undefined));
        victim.proc.kill('SIGKILL');
        killed = true;
        await victim.exited;
        await stream;
        assert.ok(admitted.length >= 10);
        await waitFor('the survivor leads', async () => {
          const pid = await leaderPid();
          return pid !== undefined && pid !== victim.pid ? pid : undefined;
        });
        for (const d of admitted)
          await waitFor(`${d}, admitted before or after the kill, is final`, async () => ((await resolves(survivor, d)) ? true : undefined));
        const pending = await pg.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM ledger_txs WHERE status = 'pending'");
        assert.equal(pending.rows[0]!.n, 0, 'nothing is left in the shared pool');
        // and nothing was applied twice: every transaction is in one block at most
        const twice = await pg.pool.query('SELECT tx_hash FROM ledger_txs WHERE block_number IS NOT NULL GROUP BY tx_hash HAVING count(*) > 1');
        assert.deepEqual(twice.rows, []);
      } finally {
        for (const c of children.splice(0)) {
          c.proc.kill('SIGTERM');
          await c.exited;
        }
        await pg.drop();
      }
    });
  });
}
