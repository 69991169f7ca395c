/**
 * Read-only mirrors end to end (docs/mirrors.md): DIDs registered and changed at a primary Directory (a real
 * node), followed by a mirror started from scratch and by one restarted on its data directory; every read route
 * answers both with the same bytes, every write route at the mirror is refused with the primary's URL, and a
 * Relay reads its Directory through the mirror.
 */
import assert from 'node:assert/strict';
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { ApplicationClient } from '../../src/client/application-client.js';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { didDocumentFor, keyPairFromSeed } from '../../src/client/keys.js';
import { PolicyClient } from '../../src/client/policy-client.js';
import { generateDid } from '../../src/protocol/did.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { rateLimitSettings } from '../../src/app/config.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { caughtUp, registerAndChange, sameAnswer, startTestMirror, type TestMirror } from '../support/mirror.js';

/** The status of a GET through `agent`, its connection kept open (held until the next event turn at least). */
function getVia(agent: Agent, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => setTimeout(() => resolve(res.statusCode ?? 0), 50));
    })
      .on('error', reject)
      .end();
  });
}

/** Status and text of a JSON request (a POST by default) through `agent`. */
function postVia(agent: Agent, url: string, body: string, method = 'POST'): Promise<{ status: number; text: string; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, method, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The read routes a mirror serves, for one DID and its transactions. */
function readPaths(did: string, alias: string, txs: readonly string[]): string[] {
  const d = encodeURIComponent(did);
  return [
    `/resolve/${d}`,
    `/registration-status/${d}`,
    `/dids/${d}/nonces`,
    `/aliases/${alias}`,
    `/delivery-view/${d}`,
    `/delivery-resolution/${d}`,
    ...txs.map((t) => `/transactions/${t}`),
    '/blocks/1',
    '/blocks/latest',
    '/resolve/did%3Aplatform%3Anobody',
    '/blocks/99999',
    '/export/genesis',
    '/export?after=0',
    '/export?after=2&count=3',
  ];
}

describe('a read-only mirror of a Directory', () => {
  let primary: TestNode;
  let mirror: TestMirror;
  let first: { did: string; txs: string[] };

  before(async () => {
    primary = await startTestNode(['--roles', 'directory']);
    first = await registerAndChange(primary.urls.directory!, 31, 'mirrored');
  });
  after(async () => {
    await mirror?.stop();
    await primary?.stop();
  });

  it('follows the primary from scratch and answers every read with the same body', async () => {
    mirror = await startTestMirror(primary.urls.directory!);
    await caughtUp(mirror, primary.urls.directory!);
    for (const path of readPaths(first.did, 'mirrored', first.txs)) await sameAnswer(primary.urls.directory!, mirror.url, path);
    const resolved = JSON.parse(await sameAnswer(primary.urls.directory!, mirror.url, `/resolve/${encodeURIComponent(first.did)}`)) as { aliases: string[] };
    assert.deepEqual(resolved.aliases, ['mirrored', 'mirrored-2']);
  });

  it('follows changes live', async () => {
    const second = await registerAndChange(primary.urls.directory!, 41, 'live-one');
    await caughtUp(mirror, primary.urls.directory!);
    for (const path of readPaths(second.did, 'live-one', second.txs)) await sameAnswer(primary.urls.directory!, mirror.url, path);
  });

  it('serves policies, delivery resolution and applications like the primary', async () => {
    const url = primary.urls.directory!;
    const dir = new DirectoryClient(url);
    const svcKey = keyPairFromSeed(new Uint8Array(32).fill(61));
    const svc = generateDid(PLATFORM, new Uint8Array(16).fill(61));
    const relayService = { id: `${svc}#relay-a`, type: PLATFORM.relayServiceType, serviceEndpoint: ['https://relay-a.example.net/ddn'] };
    await dir.waitForTransaction(
      (await dir.register({ did: svc, key: svcKey, didDocument: didDocumentFor(svc, svcKey.publicKey, { services: [relayService] }) })).tx_hash,
    );
    const owner = { key: keyPairFromSeed(new Uint8Array(32).fill(31)), keyId: 'root' };
    const policy = {
      scope: { type: 'DID', id: first.did },
      operator_did: first.did,
      policy_ttl_seconds: 120,
      ruleset: [
        {
          id: 'to-relay',
          priority: 1,
          conditions: [],
          action: {
            type: 'DeliveryPlan/v1',
            entry_step: 'fwd',
            steps: [{ id: 'fwd', operation: 'Forward', targets: [{ service_did: svc, service_id: relayService.id }] }],
            transitions: [],
          },
        },
      ],
    };
    const policies = new PolicyClient(url, PLATFORM);
    await dir.waitForTransaction((await policies.writeV3({ type: 'did', id: first.did }, { policy, signer: owner })).tx_hash);
    const apps = new ApplicationClient(url, PLATFORM);
    await dir.waitForTransaction((await apps.register('mirror-app', { controlDid: first.did, signer: owner })).tx_hash);
    await caughtUp(mirror, url);
    const d = encodeURIComponent(first.did);
    for (const path of [
      `/policies/v3/did/${d}`,
      `/policies/v3/did/${d}/nonce`,
      `/delivery-policies/dids/${d}`,
      `/delivery-resolution/${d}`,
      `/delivery-view/${d}`,
      `/resolve/${encodeURIComponent(svc)}`,
      '/applications/mirror-app',
      '/applications/mirror-app/policy',
      '/applications/no-such-app',
    ]) {
      await sameAnswer(url, mirror.url, path);
    }
    const read = JSON.parse(await sameAnswer(url, mirror.url, `/policies/v3/did/${d}`)) as { policy: { ruleset: { id: string }[] } };
    assert.deepEqual(
      read.policy.ruleset.map((r) => r.id),
      ['to-relay'],
    );
    const app = JSON.parse(await sameAnswer(url, mirror.url, '/applications/mirror-app')) as { control_did: string };
    assert.equal(app.control_did, first.did);
  });

  it("serves GET /metrics: the feed entry it holds, the stream's state, its last import, its ledger and its HTTP answers", async () => {
    await caughtUp(mirror, primary.urls.directory!);
    assert.equal((await fetch(`${mirror.url}/resolve/${encodeURIComponent(first.did)}`)).status, 200);
    const res = await fetch(`${mirror.url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await res.text();
    const sample = (series: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      assert.ok(line !== undefined, `no sample of ${series}`);
      return Number(line.slice(series.length + 1));
    };
    assert.equal(sample('ddn_mirror_feed_seq'), mirror.follower.seq);
    assert.equal(sample('ddn_mirror_connected'), 1);
    assert.equal(sample('ddn_mirror_verification_failed'), 0);
    const imported = sample('ddn_mirror_last_import_timestamp_seconds');
    assert.ok(imported > Date.now() / 1000 - 600 && imported <= Date.now() / 1000, `last import at ${imported}`);
    assert.equal(sample('ddn_ledger_head_block'), mirror.ledger.headNumber);
    assert.ok(sample('ddn_http_requests_total{role="directory",route="/resolve/:did",method="GET",status_class="2xx"}') >= 1);
  });

  it('asks for its --metrics-token, and refuses /metrics on a non-loopback host without one', async () => {
    const token = 'mirror-metrics-token-0123';
    const guarded = await startTestMirror(primary.urls.directory!, undefined, { metricsToken: token });
    const open = await startTestMirror(primary.urls.directory!, undefined, { host: '0.0.0.0' });
    try {
      const without = await fetch(`${guarded.url}/metrics`);
      assert.equal(without.status, 401);
      assert.equal(((await without.json()) as { code: string }).code, 'unauthorized');
      const wrong = await fetch(`${guarded.url}/metrics`, { headers: { authorization: 'Bearer not-the-token-at-all' } });
      assert.equal(wrong.status, 401);
      await wrong.arrayBuffer();
      const right = await fetch(`${guarded.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(right.status, 200);
      assert.match(await right.text(), /^ddn_mirror_feed_seq \d+$/m);
      const port = new URL(open.url).port;
      const refused = await fetch(`http://127.0.0.1:${port}/metrics`);
      assert.equal(refused.status, 403);
      assert.equal(((await refused.json()) as { code: string }).code, 'forbidden');
    } finally {
      await guarded.stop();
      await open.stop();
    }
  });

  it('refuses every write with read_only_mirror and the primary URL', async () => {
    const d = encodeURIComponent(first.did);
    const writes: [string, string][] = [
      ['POST', '/register-did/prepare'],
      ['POST', '/register-did'],
      ['POST', `/dids/${d}/prepare`],
      ['POST', `/dids/${d}/aliases`],
      ['PUT', '/applications/app.example/registration'],
    ];
    for (const [method, path] of writes) {
      const res = await fetch(`${mirror.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: '{}' });
      const body = (await res.json()) as { code: string; details?: { primary_url?: string } };
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.equal(body.code, 'read_only_mirror');
      assert.equal(body.details?.primary_url, primary.urls.directory);
    }
  });

  it('bounds its connections and the request bodies it reads, as a node does', async () => {
    const bounded = await startTestMirror(primary.urls.directory!, undefined, {
      connectionCaps: { maxConnections: 100, maxConnectionsPerAddress: 2 },
      bodyBudget: { maxBytes: 1024 * 1024, maxBytesPerAddress: 4096 },
    });
    // from an address of its own: the test harness keeps connections to the mirror from 127.0.0.1
    const agent = new Agent({ keepAlive: true, localAddress: '127.0.0.2' });
    try {
      // two kept-alive connections are this address's cap: a third is answered 503 and closed
      const kept = await Promise.all([0, 1].map(() => getVia(agent, `${bounded.url}/health`)));
      assert.deepEqual(kept, [200, 200]);
      const third = await postVia(new Agent({ localAddress: '127.0.0.2' }), `${bounded.url}/health`, '', 'GET');
      const refused = JSON.parse(third.text) as { code: string; details?: { reason?: string } };
      assert.equal(third.status, 503);
      assert.deepEqual([refused.code, refused.details?.reason], ['service_unavailable', 'connection_limit']);
      // on a kept connection, a body beyond the address's share is refused before it is read
      const big = await postVia(agent, `${bounded.url}/register-did`, `{"x":"${'a'.repeat(6000)}"}`);
      const share = JSON.parse(big.text) as { code: string; details?: { reason?: string } };
      assert.equal(big.status, 429);
      assert.deepEqual([share.code, share.details?.reason], ['rate_limited', 'body_share']);
    } finally {
      agent.destroy();
      await bounded.stop();
    }
  });

  it('limits the reads of each client address as a node does: 429 rate_limited with Retry-After beyond the read budget', async () => {
    const settings = rateLimitSettings(['--rate-limit-read=3/1m'], {});
    assert.ok(settings !== null);
    const limited = await startTestMirror(primary.urls.directory!, undefined, { rateLimits: settings });
    const other = new Agent({ localAddress: '127.0.0.2' });
    try {
      const path = `/resolve/${encodeURIComponent(first.did)}`;
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push(await getVia(other, `${limited.url}${path}`));
      assert.deepEqual(statuses, [200, 200, 200]);
      const over = await postVia(other, `${limited.url}${path}`, '', 'GET');
      const body = JSON.parse(over.text) as { code: string; details?: { budget?: string } };
      assert.equal(over.status, 429);
      assert.equal(body.code, 'rate_limited');
      assert.ok(Number(over.headers['retry-after']) > 0, 'Retry-After');
      // another address has a budget of its own; refusals are counted by budget
      assert.equal((await fetch(`${limited.url}${path}`)).status, 200);
      const metrics = await (await fetch(`${limited.url}/metrics`)).text();
      assert.match(metrics, /^ddn_rate_limit_refusals_total\{class="read"\} 1$/m);
      // its resolve answers, as a node's: the four answered reads (the first rendered; the others cached unless a
      // block the mirror imported meanwhile dropped the answer)
      const answers = (source: string): number =>
        Number(new RegExp(`^ddn_directory_resolve_answers_total\\{source="${source}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
      assert.equal(answers('rendered') + answers('cached'), 4);
      assert.ok(answers('rendered') >= 1 && answers('cached') >= 1, metrics);
    } finally {
      other.destroy();
      await limited.stop();
    }
  });

  it('resumes from its own cursor after a restart, then follows what changed meanwhile', async () => {
    const held = mirror.follower.seq;
    const dir = mirror.dataDir;
    await mirror.stop(true);
    const third = await registerAndChange(primary.urls.directory!, 51, 'while-down');
    mirror = await startTestMirror(primary.urls.directory!, dir);
    assert.equal(mirror.follower.startSeq, held, 'the restarted mirror asks for what follows what it held');
    await caughtUp(mirror, primary.urls.directory!);
    for (const path of readPaths(third.did, 'while-down', third.txs)) await sameAnswer(primary.urls.directory!, mirror.url, path);
    for (const path of readPaths(first.did, 'mirrored', first.txs)) await sameAnswer(primary.urls.directory!, mirror.url, path);
  });

  it('serves a Relay that reads its Directory through the mirror', async () => {
    const relay = await startTestNode(['--roles', 'relay', '--directory-url', mirror.url, '--directory-view-ttl-ms', '0']);
    try {
      const health = (await (await fetch(`${relay.urls.relay!}/health`)).json()) as { directory?: { url: string; reachable: boolean }; genesis_hash?: string };
      assert.deepEqual(health.directory, { url: mirror.url, reachable: true });
      const primaryHealth = (await (await fetch(`${primary.urls.directory!}/health`)).json()) as { genesis_hash: string };
      assert.equal(health.genesis_hash, primaryHealth.genesis_hash);
    } finally {
      await relay.stop();
    }
  });
});
