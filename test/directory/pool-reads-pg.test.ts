/**
 * Two Directory processes of one PostgreSQL ledger (http-api.md §2.3: a pending change reserves its nonce, and reads
 * answer from the pool state): a process copies another's pending changes when something reads its pool, not as
 * they are announced, so what a client sees through either process is the same — the reads (registration status,
 * a transaction, nonces, a prepare) show every change the process has heard of, and a submission refused on a
 * pool that lacks one is checked again once it is copied. No block is made and no poll falls due during these
 * tests: whatever the other process shows, a notification and a read brought it. Registers only when
 * DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertAccepted, nonces, prepareRegistration, prepareSigned, registrationSubmitBody, submit } from '../support/directory-flows.js';
import { getChecked } from '../support/inject-contract.js';
import { directoryOn } from '../support/pg-directory.js';
import { pgLedgerDeployment, type PgLedgerProcess } from '../support/pg-ledger.js';
import { PG_URL } from '../support/pg.js';

/** The `pending:<seq>` notifications `p`'s session receives from now on. */
function pendingHeardBy(p: PgLedgerProcess): string[] {
  const session = (p.sync as unknown as { session: { on: (e: 'notification', f: (m: { payload?: string }) => void) => void } }).session;
  const heard: string[] = [];
  session.on('notification', (m) => {
    if (m.payload?.startsWith('pending:') === true) heard.push(m.payload);
  });
  return heard;
}

/** Waits until `done` holds, without reading any process's pool (a read would copy what it waits for). */
async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 3000 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(done(), `never happened: ${what}`);
}

/** Counts `p`'s catch-ups from now on (each one round trip to PostgreSQL). */
function catchUpsOf(p: PgLedgerProcess): { n: number } {
  const sync = p.sync as unknown as { catchUpWithPool: () => Promise<void> };
  const own = sync.catchUpWithPool.bind(sync);
  const seen = { n: 0 };
  sync.catchUpWithPool = () => {
    seen.n++;
    return own();
  };
  return seen;
}

if (PG_URL) {
  describe('Directory on PostgreSQL, two processes: what one shows of a change accepted by the other', () => {
    async function twoDirectories() {
      const d = await pgLedgerDeployment({ pollMs: 600_000 });
      const a = await d.start(0, false);
      const b = await d.start(1, false);
      const ha = await directoryOn(a, d.clock);
      const hb = await directoryOn(b, d.clock);
      // each knows the other listens (its own LISTEN said so), and each caught up since it listened
      await Promise.all([a.sync.refresh(), b.sync.refresh()]);
      return {
        a,
        b,
        ha,
        hb,
        async close() {
          for (const h of [ha, hb]) await h.close();
          for (const p of [a, b]) await p.close();
          await d.drop();
        },
      };
    }

    it('shows a registration accepted through the other process in its reads, copied once when the first read asks', async () => {
      const t = await twoDirectories();
      try {
        const heard = pendingHeardBy(t.b);
        const catchUps = catchUpsOf(t.b);
        const r = await prepareRegistration(t.ha, 501);
        const res = await t.ha.call('POST', '/register-did', registrationSubmitBody(r.prepared, r.key));
        const txHash = assertAccepted(res);
        await until(() => heard.length > 0, "b hears of a's row");
        assert.equal(catchUps.n, 0, 'the announcement alone copies nothing');
        assert.equal(t.b.ledger.txView(txHash), undefined, "b's pool does not hold it yet");

        // the explorer's page reads no pending change: it does not wait for a catch-up
        const page = await getChecked(t.hb.server, '/explorer');
        assert.equal(page.statusCode, 200);
        assert.equal(catchUps.n, 0, 'an explorer page copies nothing');

        // three reads at once wait for one catch-up
        const did = encodeURIComponent(r.did);
        const [status, resolved, tx] = await Promise.all([
          t.hb.call('GET', `/registration-status/${did}`),
          t.hb.call('GET', `/resolve/${did}`),
          t.hb.call('GET', `/transactions/${txHash}`),
        ]);
        assert.equal(catchUps.n, 1, 'one catch-up for the three reads');
        assert.equal(status.status, 200, JSON.stringify(status.body));
        assert.equal(status.body.registration_status, 'pending');
        assert.equal(status.body.tx_hash, txHash);
        assert.equal(resolved.status, 425, JSON.stringify(resolved.body));
        assert.equal(resolved.body.code, 'registration_pending');
        assert.equal(tx.status, 200, JSON.stringify(tx.body));
        assert.equal(tx.body.status, 'pending');

        // b's nonce route answers from the pool state, a's registration in it; a read again copies nothing new
        assert.equal((await nonces(t.hb, r.did)).control_nonce, '0');
        assert.equal(catchUps.n, 1, 'nothing announced since: no catch-up');
      } finally {
        await t.close();
      }
    });

    it('prepares at one process a change to a DID whose registration is pending at the other, and reserves its nonce at both', async () => {
      const t = await twoDirectories();
      try {
        const heardByA = pendingHeardBy(t.a);
        const heardByB = pendingHeardBy(t.b);
        const r = await prepareRegistration(t.ha, 502);
        assertAccepted(await t.ha.call('POST', '/register-did', registrationSubmitBody(r.prepared, r.key)));
        await until(() => heardByB.length > 0, "b hears of a's registration");
        // the prepare reads b's pool: the pending registration is copied first, so the DID exists there
        const p = await prepareSigned(t.hb, r.did, r.key, 'deactivate_did');
        assert.equal(p.request.nonce, '0', 'the control nonce of the pending registration');
        assertAccepted(await submit(t.hb, p));
        // (a hears its own announcements too: b listens)
        await until(() => heardByA.length >= 2, "a hears of b's change");
        // a's nonce route shows the nonce reserved by b's pending change
        assert.equal((await nonces(t.ha, r.did)).control_nonce, '1');
        assert.deepEqual(
          t.a.ledger.pendingEntries().map((e) => e.tx.extrinsic),
          t.b.ledger.pendingEntries().map((e) => e.tx.extrinsic),
          'both pools hold both changes, in the same order',
        );
      } finally {
        await t.close();
      }
    });

    it('accepts a change submitted to one process for a DID whose pending registration it had not copied: its refusal is checked again on a fresh pool', async () => {
      const t = await twoDirectories();
      try {
        const heardByB = pendingHeardBy(t.b);
        const r = await prepareRegistration(t.ha, 503);
        assertAccepted(await t.ha.call('POST', '/register-did', registrationSubmitBody(r.prepared, r.key)));
        // prepared and signed at a (which holds the registration), submitted to b, which only heard of it
        const p = await prepareSigned(t.ha, r.did, r.key, 'deactivate_did');
        await until(() => heardByB.length > 0, "b hears of a's registration");
        assert.equal(t.b.ledger.hasPendingFor(r.did), false, "b's pool does not hold the registration yet");
        const txHash = assertAccepted(await submit(t.hb, p));
        assert.equal(t.b.ledger.txView(txHash)?.status, 'pending');
      } finally {
        await t.close();
      }
    });
  });
}
