/**
 * Live WebSocket delivery across Relay processes sharing one PostgreSQL database (`--db`): a session held by
 * Relay A receives, exactly once and byte for byte, an envelope posted to Relay B — small (inline NOTIFY) and
 * over 8000 bytes (by reference through `relay_live_bodies`) — and the origin never pushes twice to its own
 * sessions. Plus the PgLiveFanout itself: self-skip, the large-body table and its sweep, and reconnection.
 * Registers only when DDN_TEST_PG_URL is set.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { LiveReach } from '../../src/relay/live-sessions.js';
import { LIVE_BODY_RETENTION_MS, PgLiveFanout } from '../../src/store/postgres/live-fanout.js';
import { isoSeconds, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { fetchJson, httpDirectory } from '../cache/http-support.js';
import { didOf, keyOf, kid, registerDid, vmOf } from '../support/directory-flows.js';
import type { DirectoryHarness } from '../support/directory-harness.js';
import { connectLive, liveHeaders, liveRefusal, RecordingSessions } from '../support/live.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { freshPgSchema, PG_URL } from '../support/pg.js';
import { waitFor } from '../support/wait.js';

type Body = Record<string, unknown>;

/** A session with its proof in the upgrade headers. */
const connect = (url: string, headers: Record<string, string>) => connectLive(url, headers);

/** A Relay-only recipient with no session anywhere: 404 no_delivery_service. */
const expectNoDelivery = (res: { status: number; body: Body }) => {
  assert.equal(res.status, 404, JSON.stringify(res.body));
  assert.equal(res.body.code, 'no_delivery_service');
};

const ONE: LiveReach = { sessions: 1, authenticated: 1 };

if (PG_URL) {
  describe('live delivery across Relay processes sharing one PostgreSQL database', () => {
    let dir: TestNode;
    let cache: TestNode;
    let relayA: TestNode;
    let relayB: TestNode;
    let r: Recipient;
    let drop: () => Promise<void>;

    before(async () => {
      const pg = await freshPgSchema();
      drop = pg.drop;
      const db = ['--db', pg.url, '--db-schema', pg.schema];
      dir = await startTestNode(['--roles', 'directory']);
      cache = await startTestNode(['--roles', 'cache', '--directory-url', dir.urls.directory!, ...db]);
      const relayArgs = ['--roles', 'relay', '--directory-url', dir.urls.directory!, '--allow-private-endpoints', ...db];
      relayA = await startTestNode(relayArgs);
      relayB = await startTestNode(relayArgs);
      await Promise.all([relayA.identity.ready, relayB.identity.ready]);
      r = await registerRecipientAt(httpDirectory(dir), 83, { cacheEndpoints: [cache.urls.cache!] });
    });
    after(async () => {
      for (const n of [relayA, relayB, cache, dir]) await n?.stop();
      await drop?.();
    });

    const envelope = (payloadBytes = 16): Body => ({
      message_id: randomUUID(),
      to: r.did,
      timestamp: isoSeconds(Date.now()),
      payload: { ciphertext_b64: randomBytes(payloadBytes).toString('base64') },
    });
    const wsUrl = (relay: TestNode, device: string) => `${relay.urls.relay!.replace('http://', 'ws://')}/ws/${encodeURIComponent(r.did)}/${device}`;

    it('pushes an envelope posted to one Relay to the sessions of both, exactly once, small and large', { timeout: 60_000 }, async () => {
      const a = await connect(wsUrl(relayA, 'at-a'), liveHeaders(r, 'at-a', relayA.urls.relay!));
      const b = await connect(wsUrl(relayB, 'at-b'), liveHeaders(r, 'at-b', relayB.urls.relay!));
      const expected: string[] = [];
      /** Posts to `relay`, then waits until both sessions have the text as their next frame. */
      const post = async (relay: TestNode, env: Body) => {
        const text = JSON.stringify(env);
        const i = expected.length + 1;
        const res = await fetchJson(`${relay.urls.relay}/relay`, { body: env });
        assert.equal(res.status, 202, JSON.stringify(res.body));
        // live_sessions counts the origin process's own sessions only
        assert.equal((res.body.details as Body).live_sessions, 1);
        assert.equal(await a.frame(i), text);
        assert.equal(await b.frame(i), text);
        expected.push(text);
        return text;
      };

      const small = await post(relayB, envelope());
      const large = await post(relayB, envelope(9000));
      assert.ok(Buffer.byteLength(large) > 8000 && Buffer.byteLength(small) < 8000);
      await post(relayA, envelope(9000));
      await post(relayA, envelope());
      // Markers from the other process: any duplicate of an earlier push (an origin also acting on its own
      // announcement) would have arrived before them, announcements being delivered in commit order.
      await post(relayB, envelope());
      await post(relayA, envelope());

      assert.deepEqual(a.frames.slice(1), expected);
      assert.deepEqual(b.frames.slice(1), expected);
      for (const s of [a, b]) s.ws.close();
    });

    it('a live-session proof is single-use on PostgreSQL: its replay is 409 proof_nonce_replayed', async () => {
      const headers = liveHeaders(r, 'once', relayA.urls.relay!);
      const s = await connect(wsUrl(relayA, 'once'), headers);
      s.ws.close();
      const res = await liveRefusal(wsUrl(relayA, 'once'), headers);
      assert.equal(res.status, 409);
      assert.equal(res.body.code, 'proof_nonce_replayed');
    });

    it('a Relay-only recipient with a session on another Relay process: 202 delivered there, once; 404 once it closed', { timeout: 60_000 }, async () => {
      const dir2 = httpDirectory(dir) as DirectoryHarness;
      const did = didOf(84, dir2.profile.p);
      const key = keyOf(84);
      const document = {
        id: did,
        verificationMethod: [vmOf(did, 'key-1', key)],
        authentication: [kid(did, 'key-1')],
        service: [{ id: kid(did, 'relay'), type: 'PlatformRelayService', serviceEndpoint: [relayA.urls.relay!], authorization: [kid(did, 'key-1')] }],
      };
      await registerDid(dir2, 84, { did, key, document });
      const who = { did, key, keyId: kid(did, 'key-1'), serviceId: kid(did, 'relay') };
      const url = `${relayA.urls.relay!.replace('http://', 'ws://')}/ws/${encodeURIComponent(did)}/app`;
      const envelopeTo = () => ({ message_id: randomUUID(), to: did, timestamp: isoSeconds(Date.now()), payload: { ciphertext_b64: 'AAAA' } });
      const before = envelopeTo();
      expectNoDelivery(await fetchJson(`${relayB.urls.relay}/relay`, { body: before }));
      const s = await connect(url, liveHeaders(who, 'app', relayA.urls.relay!));
      // A writes that it holds a session of the DID in the turn after it opened: B asks A once it reads that
      const atB = await waitFor('B delivers through A', async () => {
        const env = envelopeTo();
        const res = await fetchJson(`${relayB.urls.relay}/relay`, { body: env });
        if (res.status === 404) return undefined;
        return { env, res };
      });
      assert.equal(atB.res.status, 202, JSON.stringify(atB.res.body));
      assert.equal(atB.res.body.code, 'delivered');
      assert.equal(atB.res.body.cache_result, 'no_cache_endpoints');
      assert.equal((atB.res.body.details as Body).live_sessions, 1, 'the session A reached');
      assert.equal(await s.frame(1), JSON.stringify(atB.env), 'the first frame after the welcome: nothing refused before was pushed');
      const envA = envelopeTo();
      const atA = await fetchJson(`${relayA.urls.relay}/relay`, { body: envA });
      assert.equal(atA.body.code, 'delivered');
      assert.equal(await s.frame(2), JSON.stringify(envA));
      s.ws.close();
      await waitFor('B no longer finds a session', async () => {
        const res = await fetchJson(`${relayB.urls.relay}/relay`, { body: envelopeTo() });
        return res.status === 404 ? res : undefined;
      }).then(expectNoDelivery);
      assert.equal(s.frames.length, 3, 'the welcome and the two envelopes');
    });

    it('PgLiveFanout: skips its own announcements, carries large bodies by reference, sweeps them, reconnects', { timeout: 60_000 }, async () => {
      const pg = await freshPgSchema();
      let now = 1_000_000;
      const nowMs = () => now;
      const did = 'did:platform:1234';
      const f1 = await PgLiveFanout.open({ url: pg.url, schema: pg.schema, pool: pg.pool, nowMs });
      const f2 = await PgLiveFanout.open({ url: pg.url, schema: pg.schema, pool: pg.pool, nowMs });
      try {
        const s1 = new RecordingSessions(did);
        const s2 = new RecordingSessions(did);
        f1.attach(s1);
        f2.attach(s2);
        // f1 looked before f2 listened: it announces once it has heard f2's hello
        while (!f1.announcing) await new Promise((res) => setTimeout(res, 10));
        assert.equal(f2.announcing, true, 'f2 found f1 listening when it connected');
        const rows = async () => Number((await pg.pool.query<{ n: string }>('SELECT count(*) AS n FROM relay_live_bodies')).rows[0]!.n);

        const small = JSON.stringify({ to: did, payload: 'é'.repeat(100) });
        assert.deepEqual(await f1.push(did, small), ONE);
        assert.equal(await rows(), 0, 'a small envelope travels inline');
        const large = JSON.stringify({ to: did, payload: 'é'.repeat(6000) });
        assert.deepEqual(await f1.push(did, large), ONE);
        assert.equal(await rows(), 1, 'a large envelope is stored by reference');
        // Each fan-out pushes to its own sessions at once and to the other's through the database: a local push
        // may overtake a remote one, so each recorder is checked against what the other process announced.
        const marker = JSON.stringify({ to: did, marker: 1 });
        assert.deepEqual(await f2.push(did, marker), ONE);
        await s1.received(3);
        // f1's own announcements of small and large reached its listener before f2's marker (commit order):
        // they were skipped, not pushed again.
        assert.deepEqual(
          s1.pushed.map((p) => p.text),
          [small, large, marker],
        );
        const marker2 = JSON.stringify({ to: did, marker: 2 });
        assert.deepEqual(await f1.push(did, marker2), ONE);
        await s2.received(4);
        const s2Texts = s2.pushed.map((p) => p.text);
        assert.deepEqual(
          s2Texts.filter((t) => t !== marker),
          [small, large, marker2],
          "f1's announcements, in order, once each",
        );
        assert.equal(s2Texts.filter((t) => t === marker).length, 1);

        now += LIVE_BODY_RETENTION_MS - 1;
        assert.equal(await f1.sweep(), 0);
        now += 2;
        assert.equal(await f1.sweep(), 1);
        assert.equal(await rows(), 0);

        // Cut f2's listening connection: it reconnects and receives later announcements.
        const pid = f2.listenerPid;
        assert.ok(pid !== undefined);
        await pg.pool.query('SELECT pg_terminate_backend($1)', [pid]);
        while (f2.listenCount < 2) await new Promise((res) => setTimeout(res, 20));
        const after = JSON.stringify({ to: did, after: 'reconnect' });
        await f1.push(did, after);
        await s2.received(5);
        assert.equal(s2.pushed[4]!.text, after);
        const final = JSON.stringify({ to: did, marker: 'final' });
        await f2.push(did, final);
        await s1.received(6);
        assert.deepEqual(
          s1.pushed.map((p) => p.text),
          [small, large, marker, marker2, after, final],
        );
      } finally {
        await f1.close();
        await f2.close();
        await pg.drop();
      }
    });

    it('PgLiveFanout: the announcements of one turn are one statement, received in order, identical ones each once', { timeout: 60_000 }, async (t) => {
      const pg = await freshPgSchema();
      const did = 'did:platform:1234';
      const f1 = await PgLiveFanout.open({ url: pg.url, schema: pg.schema, pool: pg.pool });
      const f2 = await PgLiveFanout.open({ url: pg.url, schema: pg.schema, pool: pg.pool });
      try {
        const s2 = new RecordingSessions(did);
        f2.attach(s2);
        while (!f1.announcing) await new Promise((res) => setTimeout(res, 10));
        const texts = [...Array.from({ length: 9 }, (_, i) => JSON.stringify({ to: did, i })), JSON.stringify({ to: did, i: 8 })];
        const statements = t.mock.method(pg.pool, 'query');
        await Promise.all(texts.map((x) => f1.push(did, x)));
        assert.equal(statements.mock.callCount(), 1, 'ten announcements, one statement');
        await s2.received(10);
        assert.deepEqual(
          s2.pushed.map((p) => p.text),
          texts,
        );
      } finally {
        await f1.close();
        await f2.close();
        await pg.drop();
      }
    });

    it('PgLiveFanout: a process alone announces nothing; it announces while another listens, and stops after it left', { timeout: 60_000 }, async () => {
      const pg = await freshPgSchema();
      const did = 'did:platform:1234';
      const f1 = await PgLiveFanout.open({ url: pg.url, schema: pg.schema, pool: pg.pool });
      // a bare listener on the channel (no lock, no hello): hears every announcement, counts for no one
      const raw = new (await import('pg')).default.Client({ connectionString: pg.url });
      const heard: string[] = [];
      raw.on('notification', (m) => heard.push(m.payload ?? ''));
      await raw.connect();
      await raw.query(`LISTEN "${f1.channel}"`);
      const settle = () => raw.query('SELECT 1').then(() => new Promise((res) => setTimeout(res, 100)));
      try {
        const s1 = new RecordingSessions(did);
        f1.attach(s1);
        assert.equal(f1.announcing, false, 'no other listener when it connected');
        assert.deepEqual(await f1.push(did, '{"alone":1}'), ONE, 'its own sessions still get the push');
        await settle();
        assert.deepEqual(heard, [], 'nothing announced');

        const f2 = await PgLiveFanout.open({ url: pg.url, schema: pg.schema, pool: pg.pool });
        const s2 = new RecordingSessions(did);
        f2.attach(s2);
        while (!f1.announcing) await new Promise((res) => setTimeout(res, 10));
        await f1.push(did, '{"two":1}');
        await s2.received(1);
        assert.equal(s2.pushed[0]!.text, '{"two":1}');
        // the bare listener hears the other process's hello and this announcement too, each when its backend gets a
        // turn (on a loaded machine, later than the other process): both heard before its list is cleared below
        await waitFor('the bare listener heard the hello and the announcement', async () => {
          const got = heard.map((h) => JSON.parse(h) as { l?: number; e?: string });
          return got.some((a) => a.l === 1) && got.some((a) => a.e === '{"two":1}') ? true : undefined;
        });
        await f2.close();
        await f1.look();
        assert.equal(f1.announcing, false, 'the other process left: a look finds no listener');
        heard.length = 0;
        await f1.push(did, '{"alone":2}');
        await settle();
        assert.deepEqual(heard, [], 'nothing announced again');
        assert.deepEqual(
          s1.pushed.map((p) => p.text),
          ['{"alone":1}', '{"two":1}', '{"alone":2}'],
        );
      } finally {
        await raw.end();
        await f1.close();
        await pg.drop();
      }
    });
  });
}
