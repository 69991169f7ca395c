/**
 * `GET /metrics` after real work: a Directory, a Cache and a Relay as separate nodes (SQLite) with real HTTP
 * between them. Counters are scraped before and after a scripted workload and must have moved by exactly the
 * work done; the request id a client sends reaches the Cache's log lines through the Relay.
 */
import { checkContract, stopChecking, urlsOf } from '../support/contract-check.js';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/app/config.js';
import { NodeMetrics, registerMetricsRoute } from '../../src/app/metrics.js';
import { startNode, type RunningNode } from '../../src/app/node.js';
import { buildInfo } from '../../src/app/version.js';
import { createHttpServer } from '../../src/http/server.js';
import { LookupGate } from '../../src/outbound/lookup-gate.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { ackBody, isoSeconds, proofHeaders, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { fetchJson, httpDirectory } from '../cache/http-support.js';
import { parseExposition, scrape, total, type Sample } from '../support/metrics.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { injectChecked } from '../support/inject-contract.js';

type Body = Record<string, unknown>;
const profile = makeProfile('platform');
const enc = encodeURIComponent;

describe('GET /metrics after a scripted workload', () => {
  let dir: TestNode;
  let cache: RunningNode;
  let cacheDir: string;
  let relay: TestNode;
  let r: Recipient;
  const cacheLog: Body[] = [];

  before(async () => {
    dir = await startTestNode(['--roles', 'directory']);
    cacheDir = mkdtempSync(join(tmpdir(), 'ddn-metrics-'));
    const config = loadConfig(['--data-dir', cacheDir, '--roles', 'cache', '--cache-port', '0', '--directory-url', dir.urls.directory!, '--access-log'], {});
    const logger = pino({ level: 'info' }, { write: (line: string) => void cacheLog.push(JSON.parse(line) as Body) });
    cache = await startNode(config, { logger });
    await checkContract(urlsOf(cache));
    // --access-log: the Relay's request scope passes the client's request id on to the Cache
    relay = await startTestNode(['--roles', 'relay', '--directory-url', dir.urls.directory!, '--allow-private-endpoints', '--access-log']);
    await relay.identity.ready;
  });
  after(async () => {
    await relay?.stop();
    await cache?.close();
    rmSync(cacheDir, { recursive: true, force: true });
    if (cache !== undefined) stopChecking(urlsOf(cache));
    await dir?.stop();
  });

  const delta = (before: readonly Sample[], after: readonly Sample[], name: string, labels: Record<string, string> = {}) =>
    total(after, name, labels) - total(before, name, labels);

  it('moves the Directory, Relay and Cache counters by exactly the work done', async () => {
    const before = { dir: await scrape(dir.urls.directory!), cache: await scrape(cache.urls.cache!), relay: await scrape(relay.urls.relay!) };

    // Directory: one accepted registration, one refused submission
    r = await registerRecipientAt(httpDirectory(dir), 71, { cacheEndpoints: [cache.urls.cache!] });
    const refused = await fetchJson(`${dir.urls.directory}/register-did`, { body: { request: {} } });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    const refusedCode = String(refused.body.code);

    // Relay → Cache: one envelope, carrying the client's request id
    const env = { message_id: randomUUID(), to: r.did, timestamp: isoSeconds(Date.now()), payload: { ciphertext_b64: Buffer.from('hi').toString('base64') } };
    const sent = await fetch(`${relay.urls.relay}/relay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'trace-metrics-1' },
      body: JSON.stringify(env),
    });
    assert.equal(sent.status, 202);
    assert.equal(sent.headers.get('x-request-id'), 'trace-metrics-1');
    const result = (await sent.json()) as Body;
    assert.equal(result.code, 'cached');

    // Cache: one retrieval, one acknowledgement, one refused store
    const proof = (op: Parameters<typeof proofHeaders>[2], subject: string) =>
      proofHeaders(profile, r, op, subject, { endpoint: cache.urls.cache!, nowMs: Date.now() });
    const pulled = await fetchJson(`${cache.urls.cache}/cache/messages/${enc(r.did)}`, { headers: proof('pull', '*') });
    assert.equal(pulled.status, 200, JSON.stringify(pulled.body));
    const p = proof('ack', env.message_id);
    const ack = await fetchJson(`${cache.urls.cache}/cache/ack`, {
      body: ackBody(p, r.did, [env.message_id]),
    });
    assert.deepEqual(ack.body, { acked: 1, message_ids: [env.message_id] });
    const badStore = await fetchJson(`${cache.urls.cache}/cache/store`, { body: '{"not json' });
    assert.equal(badStore.status, 400);
    assert.equal(badStore.body.code, 'invalid_json');
    assert.equal((await fetch(`${cache.urls.cache}/no/such/route`)).status, 404);

    const after = { dir: await scrape(dir.urls.directory!), cache: await scrape(cache.urls.cache!), relay: await scrape(relay.urls.relay!) };

    // Directory
    assert.equal(delta(before.dir, after.dir, 'ddn_directory_submissions_total', { outcome: 'ok' }), 1);
    assert.equal(delta(before.dir, after.dir, 'ddn_directory_submissions_total', { outcome: refusedCode }), 1);
    assert.equal(
      delta(before.dir, after.dir, 'ddn_http_requests_total', { role: 'directory', route: '/register-did', method: 'POST', status_class: '2xx' }),
      1,
    );
    assert.equal(
      delta(before.dir, after.dir, 'ddn_http_requests_total', { role: 'directory', route: '/register-did', method: 'POST', status_class: '4xx' }),
      1,
    );
    assert.ok(delta(before.dir, after.dir, 'ddn_ledger_head_block') >= 1, 'the registration made a block');
    assert.ok(delta(before.dir, after.dir, 'ddn_ledger_blocks_total') >= 1);
    assert.equal(total(after.dir, 'ddn_ledger_pool_transactions'), 0);

    // Relay
    assert.equal(delta(before.relay, after.relay, 'ddn_relay_deliveries_total', { mode: 'cache_fallback', code: 'cached' }), 1);
    assert.equal(delta(before.relay, after.relay, 'ddn_http_requests_total', { role: 'relay', route: '/relay', status_class: '2xx' }), 1);
    assert.equal(delta(before.relay, after.relay, 'ddn_http_request_duration_seconds_count', { role: 'relay', route: '/relay' }), 1);
    assert.equal(delta(before.relay, after.relay, 'ddn_relay_outbound_duration_seconds_count', { result: '2xx' }), 1, 'one store at the Cache');
    assert.ok(delta(before.relay, after.relay, 'ddn_directory_view_lookups_total', { result: 'miss' }) >= 1);
    assert.equal(total(after.relay, 'ddn_relay_live_sessions'), 0);
    assert.deepEqual(
      after.relay.filter((x) => x.name === 'ddn_outbound_dns_lookups').map((x) => x.labels.state),
      ['running', 'waiting'],
      "the process's outbound DNS lookups (the Cache is reached by its address: none made)",
    );

    // Cache
    assert.equal(delta(before.cache, after.cache, 'ddn_cache_operations_total', { operation: 'store', outcome: 'ok' }), 1);
    assert.equal(delta(before.cache, after.cache, 'ddn_cache_operations_total', { operation: 'store', outcome: 'invalid_json' }), 1);
    assert.equal(delta(before.cache, after.cache, 'ddn_cache_operations_total', { operation: 'retrieval', outcome: 'ok' }), 1);
    assert.equal(delta(before.cache, after.cache, 'ddn_cache_operations_total', { operation: 'ack', outcome: 'ok' }), 1);
    assert.equal(delta(before.cache, after.cache, 'ddn_http_errors_total', { role: 'cache', route: '/cache/store', code: 'invalid_json' }), 1);
    assert.equal(delta(before.cache, after.cache, 'ddn_http_requests_total', { role: 'cache', route: 'unmatched', status_class: '4xx' }), 1);

    // route labels are patterns, never raw paths
    for (const s of [...after.cache, ...after.dir]) assert.ok(!(s.labels.route ?? '').includes(r.did), `${s.name} ${JSON.stringify(s.labels)}`);
    // default process metrics and the build
    assert.ok(total(after.cache, 'process_resident_memory_bytes') > 0);
    assert.equal(total(after.cache, 'ddn_build_info', { version: buildInfo().version }), 1);

    // the client's request id reached the Cache's log lines through the Relay
    const line = cacheLog.find((l) => l.msg === 'request completed' && l.reqId === 'trace-metrics-1');
    assert.ok(line !== undefined, JSON.stringify(cacheLog.slice(-5)));
    assert.equal((line.req as Body).url, '/cache/store');
  });
});

describe('NodeMetrics.watchLiveFanout', () => {
  it('reports the announcements the fan-out dropped and its asks of other processes by outcome, read at each scrape', async () => {
    const metrics = new NodeMetrics(buildInfo());
    const fanout = { droppedAnnouncements: 0, askCounts: { none: 0, reached: 0, unreached: 0, late: 0, failed: 0 } };
    metrics.watchLiveFanout(fanout);
    const first = parseExposition(await metrics.text()).filter((x) => x.name === 'ddn_relay_live_announcements_dropped_total');
    assert.deepEqual(first, [{ name: 'ddn_relay_live_announcements_dropped_total', labels: {}, value: 0 }]);
    fanout.droppedAnnouncements = 6;
    fanout.askCounts.reached = 3;
    fanout.askCounts.late = 1;
    const second = parseExposition(await metrics.text());
    assert.equal(total(second, 'ddn_relay_live_announcements_dropped_total'), 6);
    assert.deepEqual(
      second.filter((x) => x.name === 'ddn_relay_live_asks_total').map((x) => [x.labels.outcome, x.value]),
      [
        ['none', 0],
        ['reached', 3],
        ['unreached', 0],
        ['late', 1],
        ['failed', 0],
      ],
    );
  });
});

describe('NodeMetrics.watchOutboundLookups', () => {
  it('reports the lookups at the resolver, those waiting for a turn and those refused one, read at each scrape', async () => {
    const metrics = new NodeMetrics(buildInfo());
    // a resolver that answers when the test says: the first name holds the one turn, the next waits, the third finds no room
    const held: ((err: null, addresses: never[]) => void)[] = [];
    const gate = new LookupGate((_name, _family, cb) => held.push(cb), { maxInFlight: 1, maxWaiting: 1, waitMs: 60_000 });
    metrics.watchOutboundLookups(gate);
    const read = async () => parseExposition(await metrics.text()).filter((x) => x.name.startsWith('ddn_outbound_dns_lookups'));
    assert.deepEqual(await read(), [
      { name: 'ddn_outbound_dns_lookups', labels: { state: 'running' }, value: 0 },
      { name: 'ddn_outbound_dns_lookups', labels: { state: 'waiting' }, value: 0 },
      { name: 'ddn_outbound_dns_lookups_refused_total', labels: { reason: 'full' }, value: 0 },
      { name: 'ddn_outbound_dns_lookups_refused_total', labels: { reason: 'waited' }, value: 0 },
    ]);
    const refused: (string | undefined)[] = [];
    for (const name of ['a.example', 'b.example', 'c.example']) gate.lookup(name, 0, (err) => refused.push(err?.code));
    assert.deepEqual(refused, ['EAI_AGAIN']);
    const samples = await read();
    assert.equal(total(samples, 'ddn_outbound_dns_lookups', { state: 'running' }), 1);
    assert.equal(total(samples, 'ddn_outbound_dns_lookups', { state: 'waiting' }), 1);
    assert.equal(total(samples, 'ddn_outbound_dns_lookups_refused_total', { reason: 'full' }), 1);
    assert.equal(total(samples, 'ddn_outbound_dns_lookups_refused_total', { reason: 'waited' }), 0);
    // answered: the waiting name has its turn, then nothing is left
    while (held.length > 0) held.shift()!(null, []);
    assert.equal(total(await read(), 'ddn_outbound_dns_lookups', {}), 0);
  });
});

describe('NodeMetrics.countedSweep', () => {
  it('adds what each sweep removed, by kind in snake case', async () => {
    const metrics = new NodeMetrics(buildInfo());
    const results = [
      { expiredEntries: 2, purgedChunkSets: 1, purgedChunks: 3, expiredNonces: 0 },
      { expiredEntries: 1, purgedChunkSets: 0, purgedChunks: 0, expiredNonces: 4 },
    ];
    let i = 0;
    const sweep = metrics.countedSweep('ddn_test_swept_total', 'test', async () => results[i++]!);
    assert.deepEqual(await sweep(), results[0]);
    await sweep();
    const samples = parseExposition(await metrics.text());
    assert.equal(total(samples, 'ddn_test_swept_total', { kind: 'expired_entries' }), 3);
    assert.equal(total(samples, 'ddn_test_swept_total', { kind: 'purged_chunk_sets' }), 1);
    assert.equal(total(samples, 'ddn_test_swept_total', { kind: 'purged_chunks' }), 3);
    assert.equal(total(samples, 'ddn_test_swept_total', { kind: 'expired_nonces' }), 4);
  });
});

describe('GET /metrics access', () => {
  it('asks for the bearer token when --metrics-token is set', async () => {
    const token = 'a-long-metrics-token-0123';
    const node = await startTestNode(['--roles', 'directory', '--metrics-token', token]);
    try {
      const none = await fetchJson(`${node.urls.directory}/metrics`);
      assert.equal(none.status, 401);
      assert.equal(none.body.code, 'unauthorized');
      const challenge = await fetch(`${node.urls.directory}/metrics`);
      await challenge.arrayBuffer();
      assert.equal(challenge.headers.get('www-authenticate'), 'Bearer realm="ddn"', 'every 401 names its challenge');
      const wrong = await fetchJson(`${node.urls.directory}/metrics`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } });
      assert.equal(wrong.status, 401);
      assert.equal(wrong.body.code, 'unauthorized');
      const samples = await scrape(node.urls.directory!, token);
      assert.ok(samples.some((s) => s.name === 'ddn_ledger_head_block'));
    } finally {
      await node.stop();
    }
  });

  it('answers 403 forbidden on a non-loopback address without a token', async () => {
    const server = createHttpServer({ name: 'cache', logger: false, bodyLimitBytes: 1024, tooLargeCode: 'envelope_too_large' });
    registerMetricsRoute(server, new NodeMetrics(buildInfo()), { token: null, loopback: false });
    const res = await injectChecked(server, { method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json<{ code: string }>().code, 'forbidden');
    await server.fastify.close();
  });

  it('keeps one registry per node: two nodes in one process count apart', async () => {
    const a = await startTestNode(['--roles', 'directory']);
    const b = await startTestNode(['--roles', 'directory']);
    try {
      const before = await scrape(b.urls.directory!);
      for (let i = 0; i < 3; i++) assert.equal((await fetch(`${a.urls.directory}/health`)).status, 200);
      const after = await scrape(b.urls.directory!);
      assert.equal(delta(before, after, 'ddn_http_requests_total', { route: '/health' }), 0);
      assert.equal(total(await scrape(a.urls.directory!), 'ddn_http_requests_total', { route: '/health' }), 3);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  function delta(before: readonly Sample[], after: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
    return total(after, name, labels) - total(before, name, labels);
  }
});
