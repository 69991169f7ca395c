/**
 * Playing the attacker against one real node (docs/public-node.md): every role on real sockets, profile platform,
 * small explicit limits. Each attack is refused with its status and code, and the node keeps serving honest
 * clients afterwards. Clients bind distinct loopback addresses (127.0.0.0/8 is all loopback on Linux) so that one
 * attack's per-address budget never touches another's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { ackBody, isoSeconds, proofHeaders, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { deepArrays, withMember } from '../support/deep-json.js';
import { clientRegistrationBody, docOf, keyOf, mutate, registerDid, type Reply } from '../support/directory-flows.js';
import type { DirectoryHarness } from '../support/directory-harness.js';
import { connectLive, liveHeaders, liveRefusal } from '../support/live.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { policyJson, prepareV3, sendRule, v3Url, writeV3 } from '../support/policy-flows.js';
import { waitFor } from '../support/wait.js';
import { multibaseEd25519 } from '../../src/protocol/keys.js';
import { makeProfile } from '../../src/protocol/profile.js';

type Body = Record<string, unknown>;
const enc = encodeURIComponent;
const profile = makeProfile('platform');

const REGISTRATIONS_PER_MINUTE = 10;
const PER_ADDRESS_CONNECTIONS = 16;
const STORAGE_BUDGET = 1024 * 1024;

interface Answer {
  status: number;
  body: Body;
  headers: IncomingHttpHeaders;
}

/** One HTTP request on its own connection from `localAddress`; the JSON reply. */
function call(url: string, o: { method?: string; body?: unknown; headers?: Record<string, string>; from?: string } = {}): Promise<Answer> {
  const text = o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: o.method ?? (text === undefined ? 'GET' : 'POST'),
        agent: false,
        localAddress: o.from ?? '127.0.0.1',
        // an explicit length: node's client sends a DELETE body neither chunked nor with a length
        headers: { ...(text === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) }), ...o.headers },
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8').on('data', (c: string) => (data += c));
        res.on('end', () => {
          let body: Body;
          try {
            body = JSON.parse(data) as Body;
          } catch {
            body = { unparsed: data };
          }
          resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** A Directory harness over the node's Directory, every request from `from`. */
function directoryFrom(node: TestNode, from: string): DirectoryHarness {
  const h = {
    profile,
    async call(method: string, url: string, payload?: unknown): Promise<Reply> {
      const res = await call(`${node.urls.directory!}${url}`, { method, from, ...(payload === undefined ? {} : { body: payload }) });
      return { status: res.status, body: res.body };
    },
    settle() {
      while (node.ledger.produceBlock() !== null) {
        // every pooled change is in a final block
      }
    },
  };
  return h as unknown as DirectoryHarness;
}

/** Asserts status and error code (the JSON error body or a DeliveryResult). */
function refused(res: Answer, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.code, code, JSON.stringify(res.body));
}

const envelope = (to: string, payloadBytes = 16): Body => ({
  message_id: randomUUID(),
  to,
  timestamp: isoSeconds(Date.now()),
  payload: { ciphertext_b64: randomBytes(payloadBytes).toString('base64') },
});

/** A raw TCP connection that sends nothing: what it received and its close. */
function idleSocket(port: number, localAddress: string) {
  const socket: Socket = connect({ port, host: '127.0.0.1', localAddress });
  let data = '';
  socket.setEncoding('utf8');
  socket.on('data', (c: string) => (data += c));
  socket.on('error', () => {});
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, connected, closed, received: () => data };
}

describe('an attacker against a public node (profile platform)', { timeout: 180_000 }, () => {
  let node: TestNode;
  let relayUrl: string;
  let cacheUrl: string;

  before(async () => {
    node = await startTestNode([
      '--profile',
      'platform',
      '--relay-live-auth',
      'required',
      '--rate-limit-registration',
      `${REGISTRATIONS_PER_MINUTE}/1m`,
      '--max-connections-per-address',
      String(PER_ADDRESS_CONNECTIONS),
      '--http-headers-timeout-ms',
      '4000',
      '--cache-storage-budget-bytes',
      String(STORAGE_BUDGET),
    ]);
    relayUrl = node.urls.relay!;
    cacheUrl = node.urls.cache!;
  });
  after(() => node.stop());

  const send = (body: Body | string, from = '127.0.0.1') => call(`${relayUrl}/relay`, { body, from });
  const wsUrl = (did: string, device: string) => `${relayUrl.replace('http://', 'ws://')}/ws/${enc(did)}/${enc(device)}`;

  it("eavesdropping: a stranger cannot open the victim's live session; the victim's own session is delivered to", async () => {
    const dir = directoryFrom(node, '127.0.0.11');
    const victim = await registerRecipientAt(dir, 301, { cacheEndpoints: [cacheUrl] });
    const stranger = await registerRecipientAt(dir, 302, { cacheEndpoints: [cacheUrl] });

    const noProof = await liveRefusal(wsUrl(victim.did, 'phone'));
    assert.equal(noProof.status, 401);
    assert.equal(noProof.body.code, 'live_proof_required');
    // the stranger signs with its own key, naming the victim's key
    const ownKey = await liveRefusal(wsUrl(victim.did, 'phone'), liveHeaders(victim, 'phone', relayUrl, { key: stranger.key }));
    assert.equal(ownKey.status, 403);
    assert.equal(ownKey.body.code, 'invalid_signature');
    // the stranger's own DID's service and key, for the victim's path
    const ownService = await liveRefusal(
      wsUrl(victim.did, 'phone'),
      liveHeaders(victim, 'phone', relayUrl, { key: stranger.key, keyId: stranger.keyId, serviceId: stranger.serviceId }),
    );
    assert.equal(ownService.status, 403);
    assert.equal(ownService.body.code, 'live_service_not_found');

    // the honest victim, and the stranger on its own DID
    const mine = await connectLive(wsUrl(victim.did, 'phone'), liveHeaders(victim, 'phone', relayUrl));
    const theirs = await connectLive(wsUrl(stranger.did, 'phone'), liveHeaders(stranger, 'phone', relayUrl));
    const secret = envelope(victim.did);
    const res = await send(secret);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.equal(res.body.code, 'delivered');
    assert.equal(await mine.frame(1), JSON.stringify(secret));
    // the stranger's next frame is its own envelope: it never saw the victim's
    const own = envelope(stranger.did);
    assert.equal((await send(own)).body.code, 'delivered');
    assert.equal(await theirs.frame(1), JSON.stringify(own));
    assert.ok(!theirs.frames.some((f) => f.includes(String(secret.message_id))));
    for (const s of [mine, theirs]) {
      s.ws.close();
      await s.closed;
    }
  });

  it('a registration flood from one address is throttled (429 rate_limited, Retry-After); another address is served', async () => {
    const flooder = '127.0.0.2';
    const prepareUrl = `${node.urls.directory!}/register-did/prepare`;
    const answers: Answer[] = [];
    for (let i = 0; i < 3 * REGISTRATIONS_PER_MINUTE; i++) answers.push(await call(prepareUrl, { body: {}, from: flooder }));
    const throttled = answers.filter((a) => a.status === 429);
    assert.ok(throttled.length >= 2 * REGISTRATIONS_PER_MINUTE, `only ${throttled.length} of ${answers.length} throttled`);
    for (const a of throttled) {
      assert.equal(a.body.code, 'rate_limited');
      assert.match(String(a.headers['retry-after']), /^[1-9]\d*$/);
    }
    // the rest were served (and refused for their empty body)
    for (const a of answers.filter((x) => x.status !== 429)) refused(a, 400, a.body.code as string);
    // an honest client elsewhere registers as usual; the flooder is still throttled
    const honest = await registerDid(directoryFrom(node, '127.0.0.3'), 303);
    assert.equal(honest.submitted.status, 'accepted');
    refused(await call(prepareUrl, { body: {}, from: flooder }), 429, 'rate_limited');
  });

  it('amplification: a DID policy whose CacheStored rule Sends to an unrelated DID is refused when written', async () => {
    const dir = directoryFrom(node, '127.0.0.4');
    const owner = await registerRecipientAt(dir, 304, { cacheEndpoints: [cacheUrl] });
    const target = await registerRecipientAt(dir, 305, { cacheEndpoints: [cacheUrl] });
    const before = await dir.call('GET', v3Url('did', owner.did));
    const res = await prepareV3(dir, 'did', owner.did, {
      action: 'set_policy_v3',
      policy: policyJson('DID', owner.did, owner.did, [sendRule('spam', target.did)]),
    });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.code, 'invalid_delivery_policy');
    assert.equal((res.body.details as Body).reason, 'send_target_not_consented');
    // nothing changed
    assert.deepEqual(await dir.call('GET', v3Url('did', owner.did)), before);
    assert.notEqual(before.status, 200, JSON.stringify(before.body));
    // notifying oneself is fine
    await writeV3(dir, owner.key, 'did', owner.did, {
      action: 'set_policy_v3',
      policy: policyJson('DID', owner.did, owner.did, [sendRule('self', owner.did)]),
    });
    const now = await dir.call('GET', v3Url('did', owner.did));
    assert.equal(now.status, 200, JSON.stringify(now.body));
    assert.equal(((now.body.policy as Body).ruleset as Body[])[0]!.id, 'self');
  });

  it('take-over: a deleted DID cannot be registered again by a stranger (409 did_deleted)', async () => {
    const ownerDir = directoryFrom(node, '127.0.0.5');
    const victim = await registerDid(ownerDir, 306);
    await mutate(ownerDir, victim.did, victim.key, 'delete_did');
    const status = () => ownerDir.call('GET', `/registration-status/${enc(victim.did)}`);
    await waitFor('the deletion is final', async () => ((await status()).body.registration_status === 'missing' ? true : undefined));

    const attacker = directoryFrom(node, '127.0.0.6');
    const key = keyOf(307);
    const document = docOf(victim.did, key);
    const prepared = await attacker.call('POST', '/register-did/prepare', {
      did: victim.did,
      root_pubkey: multibaseEd25519(key.publicKey, false),
      did_document: document,
    });
    assert.equal(prepared.status, 409, JSON.stringify(prepared.body));
    assert.equal(prepared.body.code, 'did_deleted');
    // a registration signed without prepare
    const wallClock = { ...attacker, clock: { nowMs: () => Date.now() } } as unknown as DirectoryHarness;
    const submitted = await attacker.call('POST', '/register-did', clientRegistrationBody(wallClock, victim.did, key));
    assert.equal(submitted.status, 409, JSON.stringify(submitted.body));
    assert.equal(submitted.body.code, 'did_deleted');
    node.ledger.produceBlock();
    const after = await status();
    assert.equal(after.status, 200);
    assert.equal(after.body.registration_status, 'missing');
    // the stranger registers an identifier of its own as usual
    const own = await registerDid(attacker, 307);
    await waitFor("the stranger's own DID is confirmed", async () =>
      (await attacker.call('GET', `/registration-status/${enc(own.did)}`)).body.registration_status === 'confirmed' ? true : undefined,
    );
  });

  it('storage: a mailbox filled to the budget answers 507; the victim drains it; nothing accepted is lost; stores resume', async () => {
    const victim: Recipient = await registerRecipientAt(directoryFrom(node, '127.0.0.7'), 308, { cacheEndpoints: [cacheUrl] });
    const attacker = '127.0.0.8';
    const store = (env: Body) => call(`${cacheUrl}/cache/store`, { body: env, from: attacker });
    const accepted: string[] = [];
    let refusal: Answer | undefined;
    for (let i = 0; i < 400 && refusal === undefined; i++) {
      const env = envelope(victim.did, 20_000);
      const res = await store(env);
      if (res.status === 202) accepted.push(String(env.message_id));
      else refusal = res;
    }
    assert.ok(refusal, `the budget never ran out after ${accepted.length} stores`);
    refused(refusal, 507, 'insufficient_storage');
    assert.ok(accepted.length > 0);
    refused(await store(envelope(victim.did, 20_000)), 507, 'insufficient_storage');

    // the victim drains: summary, pull, ack
    const proof = (op: 'summary' | 'pull' | 'ack', subject: string) => proofHeaders(profile, victim, op, subject, { endpoint: cacheUrl, nowMs: Date.now() });
    const summary = await call(`${cacheUrl}/cache/summary/${enc(victim.did)}`, { headers: proof('summary', '*') });
    assert.equal(summary.status, 200, JSON.stringify(summary.body));
    const pulled = await call(`${cacheUrl}/cache/messages/${enc(victim.did)}`, { headers: proof('pull', '*') });
    assert.equal(pulled.status, 200, JSON.stringify(pulled.body));
    const held = ((pulled.body.messages ?? []) as { message_id: string }[]).map((m) => m.message_id);
    const listed = ((summary.body.messages ?? summary.body.entries ?? []) as { message_id: string }[]).map((m) => m.message_id);
    // every envelope that got a 202 is listed and pulled
    for (const id of accepted) {
      assert.ok(listed.includes(id), `accepted ${id} is not in the summary`);
      assert.ok(held.includes(id), `accepted ${id} was not pulled`);
    }
    const ids = [...new Set(listed)].sort();
    const acked = await call(`${cacheUrl}/cache/ack`, { body: ackBody(proof('ack', ids.join(',')), victim.did, ids) });
    assert.equal(acked.status, 200, JSON.stringify(acked.body));
    const emptied = await call(`${cacheUrl}/cache/summary/${enc(victim.did)}`, { headers: proof('summary', '*') });
    assert.deepEqual((emptied.body.messages ?? emptied.body.entries) as unknown[], [], JSON.stringify(emptied.body));
    // room again
    const again = await store(envelope(victim.did, 20_000));
    assert.equal(again.status, 202, JSON.stringify(again.body));
  });

  it('an idle-connection flood: the excess is refused, an honest client is served meanwhile, the idle ones are closed', async () => {
    const port = Number(new URL(node.urls.directory!).port);
    const flood = Array.from({ length: 2 * PER_ADDRESS_CONNECTIONS + 8 }, () => idleSocket(port, '127.0.0.9'));
    await Promise.all(flood.map((c) => c.connected));
    // an honest client is served while the flood holds its connections
    const health = await call(`${node.urls.directory!}/health`);
    assert.equal(health.status, 200, JSON.stringify(health.body));
    await Promise.all(flood.map((c) => c.closed));
    const answered = flood.filter((c) => c.received() !== '');
    const silent = flood.filter((c) => c.received() === '');
    assert.ok(answered.length >= 1, 'no connection was refused');
    assert.ok(silent.length >= PER_ADDRESS_CONNECTIONS, `only ${silent.length} were admitted`);
    for (const c of answered) {
      const text = c.received();
      assert.match(text, /^HTTP\/1\.1 503 /);
      const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as Body;
      assert.equal(body.code, 'service_unavailable');
      assert.equal((body.details as Body).reason, 'connection_limit');
    }
    // the flooding address is admitted again once its connections are gone
    assert.equal((await call(`${node.urls.directory!}/health`, { from: '127.0.0.9' })).status, 200);
  });

  it('deep JSON: a body nesting 5,000 deep is 400 invalid_json at the Relay (and the Cache and the Directory), never a 5xx', async () => {
    const r = await registerRecipientAt(directoryFrom(node, '127.0.0.10'), 309, { cacheEndpoints: [cacheUrl] });
    const res = await send(withMember(envelope(r.did), 'context', deepArrays(5000)));
    refused(res, 400, 'invalid_json');
    assert.equal((res.body.details as Body).reason, 'too_deep');
    assert.equal(res.body.success, false);
    // the same at the Cache and the Directory
    const stored = await call(`${cacheUrl}/cache/store`, { body: withMember(envelope(r.did), 'context', deepArrays(5000)) });
    refused(stored, 400, 'invalid_json');
    const registered = await call(`${node.urls.directory!}/register-did/prepare`, { body: withMember({ did: r.did }, 'did_document', deepArrays(5000)) });
    refused(registered, 400, 'invalid_json');
    const ok = await send(envelope(r.did));
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
    assert.equal(ok.body.code, 'cached');
  });
});
