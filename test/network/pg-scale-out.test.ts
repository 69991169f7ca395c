/**
 * Issue 7's deployment test: two Directory, two Cache and two Relay processes (`ddn serve` children) on one
 * PostgreSQL schema. A stream of envelopes goes to both Relays; midway one Relay, one Cache and the Directory
 * that produces the ledger's blocks are killed with SIGKILL. Every envelope that got a 202 is then retrieved
 * exactly once (pull, acknowledge, pull again until empty) through the surviving Cache, and the ledger keeps
 * producing blocks under the surviving Directory. Registers only when DDN_TEST_PG_URL is set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { ATTESTOR_KEY_FILE, GENESIS_FILE } from '../../src/app/node-keys.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { ackSubject } from '../../src/protocol/retrieval-proof.js';
import { ackBody, isoSeconds, proofHeaders, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { fetchJson } from '../cache/http-support.js';
import { freshPgSchema, ledgerLeaderPid, PG_URL } from '../support/pg.js';
import { serveProcess, serveScratch, type ServeProcess } from '../support/serve-process.js';
import { waitFor as poll } from '../support/wait.js';

const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) => poll(what, probe, { everyMs: 50, ignoreErrors: true });

const profile = makeProfile('platform');
const BEFORE_KILL = 60;
const AFTER_KILL = 60;
const WORKERS = 8;

const { tempDir, children } = serveScratch('ddn-scale-');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

if (PG_URL) {
  describe('every role scaled out on one PostgreSQL, under SIGKILL', () => {
    it('loses no accepted envelope and keeps producing blocks when a Relay, a Cache and the ledger leader die', async () => {
      const pg = await freshPgSchema();
      try {
        const db = ['--db', pg.url, '--db-schema', pg.schema, '--log-level', 'silent', '--block-time-ms', '50'];
        const start = async (args: string[], dataDir = tempDir()): Promise<ServeProcess> => {
          const p = await serveProcess(['--data-dir', dataDir, '--directory-port', '0', '--relay-port', '0', '--cache-port', '0', ...db, ...args]);
          children.push(p);
          return p;
        };
        const leaderPid = () => ledgerLeaderPid(pg);

        // Two Directories of one chain: the second gets the first's genesis and attestor key, as an operator copies them.
        const d1Dir = tempDir();
        const d1 = await start(['--roles', 'directory'], d1Dir);
        const d2Dir = tempDir();
        for (const f of [GENESIS_FILE, ATTESTOR_KEY_FILE]) copyFileSync(join(d1Dir, f), join(d2Dir, f));
        const d2 = await start(['--roles', 'directory'], d2Dir);
        const firstLeader = await waitFor('a ledger leader', leaderPid);
        const leader = [d1, d2].find((d) => d.pid === firstLeader)!;
        assert.ok(leader, 'one of the two Directory processes leads');
        const survivorDir = leader === d1 ? d2 : d1;
        const directoryUrls = [d1.urls.directory!, d2.urls.directory!].join(',');

        const c1 = await start(['--roles', 'cache', '--directory-url', directoryUrls]);
        const c2 = await start(['--roles', 'cache', '--directory-url', directoryUrls]);
        const relayArgs = ['--roles', 'relay', '--directory-url', directoryUrls, '--allow-private-endpoints'];
        const r1 = await start(relayArgs);
        const r2 = await start(relayArgs);

        // The recipient's Cache service lists both Caches; a Relay falls over to the second when the first is gone.
        const directory = {
          profile,
          async call(method: string, url: string, payload?: unknown) {
            const res = await fetch(`${survivorDir.urls.directory!}${url}`, {
              method,
              ...(payload === undefined ? {} : { body: JSON.stringify(payload), headers: { 'content-type': 'application/json' } }),
            });
            return { status: res.status, body: (await res.json()) as Record<string, unknown> };
          },
          settle() {
            // blocks come from the leader; readiness is awaited below
          },
        };
        // a Cache knows itself by its own listener's URL (proofs name it, Relays sign their requests for it): the
        // recipient publishes the children's own URLs, so the Relays' forwards reach the Caches directly; the test's
        // own requests go through the contract-checking proxies (test/support/checked-proxy.ts)
        const r: Recipient = await registerRecipientAt(directory, 91, { cacheEndpoints: [c1.direct.cache!, c2.direct.cache!] });
        for (const d of [d1, d2]) {
          await waitFor('the recipient resolves at every Directory', async () =>
            (await fetch(`${d.urls.directory!}/resolve/${encodeURIComponent(r.did)}`)).status === 200 ? true : undefined,
          );
        }

        const envelope = () => ({
          message_id: randomUUID(),
          to: r.did,
          timestamp: isoSeconds(Date.now()),
          payload: { ciphertext_b64: Buffer.from(randomUUID()).toString('base64') },
        });
        // Each Relay first registers its node DID (Caches verify its signature): wait until each delivers once.
        const accepted = new Set<string>();
        for (const relay of [r1, r2]) {
          await waitFor('the Relay delivers', async () => {
            const env = envelope();
            const res = await fetchJson(`${relay.urls.relay!}/relay`, { body: env });
            if (res.status !== 202) return undefined;
            accepted.add(env.message_id);
            return true;
          });
        }

        let target = accepted.size + BEFORE_KILL;
        let next = 0;
        const stream = async (): Promise<void> => {
          const workers = Array.from({ length: WORKERS }, async () => {
            while (accepted.size < target) {
              const relay = [r1, r2][next++ % 2]!;
              const env = envelope();
              try {
                const res = await fetchJson(`${relay.urls.relay!}/relay`, { body: env });
                if (res.status === 202) accepted.add(env.message_id);
              } catch {
                await sleep(5); // a killed Relay refuses connections
              }
            }
          });
          await Promise.all(workers);
        };
        await stream();

        // Kill one of each while the stream goes on.
        target = accepted.size + AFTER_KILL;
        const during = stream();
        await sleep(100);
        for (const victim of [r1, c1, leader]) victim.proc.kill('SIGKILL');
        await Promise.all([r1.exited, c1.exited, leader.exited]);
        await during;

        // A new leader takes over and the ledger keeps producing blocks.
        const newLeader = await waitFor('a new ledger leader', async () => {
          const pid = await leaderPid();
          return pid !== undefined && pid !== leader.pid ? pid : undefined;
        });
        assert.equal(newLeader, survivorDir.pid);
        const headBefore = await fetchJson(`${survivorDir.urls.directory!}/health`);
        const late = await registerRecipientAt(directory, 92, { cacheEndpoints: [c2.direct.cache!] });
        await waitFor('a DID registered after the leader died is final', async () =>
          (await fetch(`${survivorDir.urls.directory!}/resolve/${encodeURIComponent(late.did)}`)).status === 200 ? true : undefined,
        );
        const headAfter = await fetchJson(`${survivorDir.urls.directory!}/health`);
        assert.ok(
          (headAfter.body.head as { number: number }).number > (headBefore.body.head as { number: number }).number,
          'blocks continue under the new leader',
        );

        // Retrieve through the surviving Cache: pull, acknowledge, until nothing is left.
        const proof = (op: Parameters<typeof proofHeaders>[2], subject: string) =>
          proofHeaders(profile, r, op, subject, { endpoint: c2.direct.cache!, nowMs: Date.now() });
        const seen = new Map<string, number>();
        for (;;) {
          const page = await fetchJson(`${c2.urls.cache!}/cache/messages/${encodeURIComponent(r.did)}`, { headers: proof('pull', '*') });
          assert.equal(page.status, 200, JSON.stringify(page.body));
          const ids = (page.body.messages as { message_id: string }[]).map((m) => m.message_id);
          if (ids.length === 0) break;
          for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
          const p = proof('ack', ackSubject(ids));
          const ack = await fetchJson(`${c2.urls.cache!}/cache/ack`, {
            body: ackBody(p, r.did, ids),
          });
          assert.equal(ack.status, 200, JSON.stringify(ack.body));
          assert.equal(ack.body.acked, ids.length);
        }
        const missing = [...accepted].filter((id) => !seen.has(id));
        assert.deepEqual(missing, [], `${missing.length} of ${accepted.size} accepted envelopes were lost`);
        const repeated = [...seen].filter(([, n]) => n > 1);
        assert.deepEqual(repeated, [], 'no envelope is served again after its acknowledgement');
        assert.ok(accepted.size >= BEFORE_KILL + AFTER_KILL);
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
