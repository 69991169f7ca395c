/**
 * The Directory's 503 on PostgreSQL (http-api.md §1: `ledger_unavailable`, "ledger not reachable / not ready"): a
 * submission that finds the queue of admissions waiting for the ledger database full is refused at once, with
 * `Retry-After`, and changes nothing; the queued ones are admitted once the database takes them. Registers only
 * when DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { DirectoryHarness } from '../support/directory-harness.js';
import { prepareRegistration, registrationSubmitBody } from '../support/directory-flows.js';
import { OpenApiChecker, type OpenApiDocument } from '../support/openapi-check.js';
import { directoryOn } from '../support/pg-directory.js';
import { AdmissionLockHolder, pgLedgerDeployment } from '../support/pg-ledger.js';
import { PG_URL } from '../support/pg.js';
import { injectChecked } from '../support/inject-contract.js';

type Prepared = Awaited<ReturnType<typeof prepareRegistration>>;

function submit(h: DirectoryHarness, r: Prepared) {
  return injectChecked(h.server, { method: 'POST', url: '/register-did', payload: registrationSubmitBody(r.prepared, r.key) });
}

if (PG_URL) {
  describe('Directory on PostgreSQL: a full queue of admissions', () => {
    it('answers 503 ledger_unavailable with Retry-After, and admits the queued submissions once the database takes them', async () => {
      const d = await pgLedgerDeployment({ maxWaiting: 1 });
      const p = await d.start(0, false);
      const h = await directoryOn(p, d.clock);
      const holder = await AdmissionLockHolder.open(d.url, d.schema);
      try {
        const prepared: Prepared[] = [];
        for (const seed of [411, 412, 413]) prepared.push(await prepareRegistration(h, seed));
        // another session holds the admission lock: the first submission's batch waits for it
        await holder.take();
        const first = submit(h, prepared[0]!);
        await holder.waiter();
        // one of the next two takes the one waiting place, the other finds the queue full
        const next = [submit(h, prepared[1]!), submit(h, prepared[2]!)];
        const refused = await Promise.race(next);
        assert.equal(refused.statusCode, 503, refused.body);
        const body = refused.json<{ code: string; error: string }>();
        assert.equal(body.code, 'ledger_unavailable');
        assert.equal(body.error, 'ledger_unavailable');
        assert.ok(Number(refused.headers['retry-after']) >= 1, `Retry-After: ${String(refused.headers['retry-after'])}`);
        const doc = (await injectChecked(h.server, { method: 'GET', url: '/openapi.json' })).json<OpenApiDocument>();
        assert.equal(new OpenApiChecker(doc).problem('POST', '/register-did', 503, body), undefined, 'the 503 is in the route document');

        await holder.release();
        const statuses = (await Promise.all([first, ...next])).map((a) => a.statusCode);
        assert.deepEqual(statuses.sort(), [202, 202, 503], 'the first and the queued one admitted');
        assert.equal(p.ledger.pendingEntries().length, 2, 'the refused submission changed nothing');
      } finally {
        await holder.close();
        await h.close();
        await p.close();
        await d.drop();
      }
    });
  });
}
