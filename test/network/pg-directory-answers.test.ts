/**
 * Two Directory processes (`ddn serve --roles directory` children) of one ledger on PostgreSQL answer a write
 * the same, whichever of them takes it: the producer of the blocks or the other. The same signed change
 * submitted to both is admitted once (the second answer marks it a duplicate, with the same body at either
 * process), a refused change gets the same status and body at both, and the change is in one block only.
 * Registers only when DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertAccepted, kaOf, keyOf, prepareRegistration, prepareSigned, registrationSubmitBody, type Prepared } from '../support/directory-flows.js';
import { overHttp, resolves, twoDirectories } from '../support/directory-over-http.js';
import { freshPgSchema, ledgerLeaderPid, PG_URL } from '../support/pg.js';
import { serveScratch, type ServeProcess } from '../support/serve-process.js';
import { waitFor as poll } from '../support/wait.js';

const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) => poll(what, probe, { everyMs: 50, ignoreErrors: true });

const { tempDir, children } = serveScratch('ddn-pg-answers-');

/** What a client sees of an answer: status, content type and the body's exact text. */
async function wire(p: ServeProcess, change: Prepared, body: unknown = change.body): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`${p.urls.directory!}${change.route.url}`, {
    method: change.route.method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

if (PG_URL) {
  describe('two Directory processes on one PostgreSQL answer a write the same', () => {
    it('admits one signed change once through either process, and answers a duplicate and a refusal identically at both', async () => {
      const pg = await freshPgSchema();
      try {
        const db = ['--db', pg.url, '--db-schema', pg.schema, '--log-level', 'silent', '--block-time-ms', '20'];
        const [d1, d2] = await twoDirectories(tempDir, children, db);
        const leaderPid = () => ledgerLeaderPid(pg);
        const producerPid = await waitFor('a ledger producer', leaderPid);
        const producer = producerPid === d1.pid ? d1 : d2;
        const other = producer === d1 ? d2 : d1;
        const [hp, ho] = [overHttp(producer), overHttp(other)];

        // a DID registered through the process that does not produce, final at both
        const { did, key, prepared } = await prepareRegistration(ho, 7);
        assertAccepted(await ho.call('POST', '/register-did', registrationSubmitBody(prepared, key)));
        for (const h of [hp, ho]) await waitFor(`${did} resolves at both`, async () => ((await resolves(h, did)) ? true : undefined));

        // One signed change, submitted to the other process, then (while pending or after) to both again.
        const change = await prepareSigned(ho, did, keyOf(7), 'AddKeyAgreement', { key_agreement: kaOf(did, 'ka-1', 1) });
        const first = await wire(other, change);
        assert.equal(first.status, 202, first.text);
        const txHash = (JSON.parse(first.text) as { tx_hash: string }).tx_hash;
        const atProducer = await wire(producer, change);
        const atOther = await wire(other, change);
        // a duplicate of the pending transaction, or (its block already made) a refusal of its used nonce: the
        // same status, type and bytes from either process
        assert.deepEqual(atProducer, atOther);
        assert.ok([202, 409].includes(atProducer.status), atProducer.text);
        if (atProducer.status === 202) assert.deepEqual(JSON.parse(atProducer.text), { ...(JSON.parse(first.text) as object), duplicate: true });

        // Once it is final, the same change again is refused (its nonce is used) with the same answer at both.
        await waitFor('the change is final at both', async () => {
          const views = await Promise.all([hp, ho].map((h) => h.call('GET', `/transactions/${txHash}`)));
          return views.every((v) => v.status === 200 && v.body.status === 'finalized') ? true : undefined;
        });
        const [again1, again2] = [await wire(producer, change), await wire(other, change)];
        assert.equal(again1.status, 409, again1.text);
        assert.deepEqual(again1, again2);
        assert.equal((JSON.parse(again1.text) as { code: string }).code, 'nonce_mismatch');

        // A change with a bad signature: the same refusal from both.
        const next = await prepareSigned(hp, did, keyOf(7), 'AddKeyAgreement', { key_agreement: kaOf(did, 'ka-2', 2) });
        const forged = { ...next.body, signature: `0x${'00'.repeat(64)}` };
        const [bad1, bad2] = [await wire(producer, next, forged), await wire(other, next, forged)];
        assert.ok(bad1.status >= 400 && bad1.status < 500, bad1.text);
        assert.deepEqual(bad1, bad2);

        // The change was applied once: one row in one block.
        const rows = await pg.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_txs WHERE tx_hash = $1 AND block_number IS NOT NULL', [txHash]);
        assert.equal(rows.rows[0]!.n, 1);
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
