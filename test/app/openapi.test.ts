/**
 * `GET /openapi.json` on every role: an OpenAPI 3.1 document generated from the routes' schemas, listing every
 * route with a success and error responses, none documenting a bare JSON object; every response of a scripted
 * workload over real HTTP (Directory, Relay, Cache on SQLite) validates against the document's schema for its route
 * and status. (The Directory suites check every answer they read the same way: test/support/directory-harness.ts.)
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ERROR_STATUS, type ErrorCode } from '../../src/base/errors.js';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { FEED_STREAM_UPGRADE_ERRORS } from '../../src/directory/export-stream.js';
import { LIVE_UPGRADE_ERRORS } from '../../src/relay/websocket-route.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { ackBody, isoSeconds, proofHeaders, registerRecipientAt } from '../cache/harness.js';
import { httpDirectory } from '../cache/http-support.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { genericAnswers, isGeneric, OpenApiChecker, templateOf, type OpenApiDocument } from '../support/openapi-check.js';

interface Seen {
  method: string;
  url: string;
  status: number;
  body: unknown;
}

const profile = makeProfile('platform');
const enc = encodeURIComponent;

describe('OpenAPI document', () => {
  let node: TestNode;
  const seen: Seen[] = [];
  const realFetch = globalThis.fetch;

  before(async () => {
    node = await startTestNode(['--roles', 'directory,relay,cache', '--allow-private-endpoints']);
    await node.identity.ready;
    // every answer of the workload, as the client read it
    globalThis.fetch = async (input, init) => {
      const res = await realFetch(input, init);
      const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      const text = await res.clone().text();
      seen.push({ method: (init?.method ?? 'GET').toLowerCase(), url: url.pathname, status: res.status, body: text === '' ? undefined : JSON.parse(text) });
      return res;
    };
  });
  after(async () => {
    globalThis.fetch = realFetch;
    await node?.stop();
  });

  it("is served by every role, lists every route with success and error answers, and the workload's answers match it", async () => {
    const docs: Record<string, OpenApiDocument> = {};
    for (const role of ['directory', 'relay', 'cache'] as const) {
      const res = await realFetch(`${node.urls[role]}/openapi.json`);
      assert.equal(res.status, 200);
      const doc = (await res.json()) as OpenApiDocument;
      assert.equal(doc.openapi, '3.1.0');
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          const statuses = Object.keys(op.responses);
          // WebSocket routes are upgrades: their success is 101
          const success = (op as { 'x-websocket'?: boolean })['x-websocket'] === true ? /^101$/ : /^2/;
          assert.ok(
            statuses.some((s) => success.test(s)),
            `${role} ${method} ${path}: a success answer`,
          );
          assert.ok(
            statuses.some((s) => /^[45]/.test(s)),
            `${role} ${method} ${path}: error answers`,
          );
        }
      }
      // every answer, success and error, names its members (no route documents a bare JSON object)
      assert.deepEqual(genericAnswers(doc), [], `${role}: answers documented as a bare JSON object`);
      docs[role] = doc;
    }
    // every change documents its request body, naming its members
    for (const [role, doc] of Object.entries(docs)) {
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          if (method === 'get' || method === 'head') continue;
          const schema = (op as { requestBody?: { content?: Record<string, { schema?: Record<string, unknown> }> } }).requestBody?.content?.['application/json']
            ?.schema;
          assert.ok(schema !== undefined && !isGeneric(schema), `${role} ${method} ${path}: a described request body`);
        }
      }
    }
    assert.ok(docs.cache!.paths['/cache/store']?.post !== undefined);
    assert.ok(docs.relay!.paths['/relay/{recipientDid}']?.post !== undefined);
    assert.ok(docs.directory!.paths['/resolve/{did}']?.get !== undefined);

    // the workload: a registration, a delivery through the Relay to the Cache, a pull, an ack, limits and errors
    const r = await registerRecipientAt(httpDirectory(node), 83, { cacheEndpoints: [node.urls.cache!] });
    const dirUrl = node.urls.directory!;
    const cacheUrl = node.urls.cache!;
    const relayUrl = node.urls.relay!;
    const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    await fetch(`${dirUrl}/resolve/${enc(r.did)}`);
    await fetch(`${dirUrl}/registration-status/${enc(r.did)}`);
    await fetch(`${dirUrl}/dids/${enc(r.did)}/nonces`);
    await fetch(`${dirUrl}/delivery-resolution/${enc(r.did)}`);
    await fetch(`${dirUrl}/blocks/latest`);
    await fetch(`${dirUrl}/health`);
    await fetch(`${dirUrl}/resolve/not-a-did`);
    await post(`${dirUrl}/register-did`, { request: {} });
    // Directory reads and their errors: history, blocks, transactions, aliases, personas, policies, applications
    const dirReads = [
      `/dids/${enc(r.did)}/history?limit=5`,
      '/dids/did%3Aplatform%3Anobody/history',
      '/blocks/1',
      '/blocks/99999999',
      '/blocks/x',
      `/transactions/0x${'0'.repeat(64)}`,
      '/transactions/nope',
      `/aliases/${enc(r.alias)}`,
      '/aliases/nobody-here',
      '/personas/nobody.example.com',
      '/personas/nobody.example.com/nonces',
      '/personas/nobody.example.com/history',
      `/persona-operators/${enc(r.did)}/nonce`,
      `/delivery-policies/dids/${enc(r.did)}`,
      '/delivery-policies/personas/nobody.example.com',
      `/policies/v3/did/${enc(r.did)}`,
      `/policies/v3/did/${enc(r.did)}/nonce`,
      '/policies/v3/nothing/x',
      '/applications/no-such-app',
      '/applications/NOT_AN_ID',
      '/applications/no-such-app/policy',
      '/applications/no-such-app/history',
      `/delivery-view/${enc(r.did)}`,
      '/export/genesis',
      '/ready',
      '/ready/writes',
    ];
    for (const path of dirReads) await fetch(`${dirUrl}${path}`);
    // a DID mutation, prepared and submitted by the SDK, and failing preparations
    const client = new DirectoryClient(dirUrl, { fetch: (input, init) => globalThis.fetch(input, init) });
    await client.addAlias(r.did, r.key, 'root', { alias: `openapi-${Date.now()}` });
    await post(`${dirUrl}/dids/${enc(r.did)}/prepare`, { did: r.did, action: 'no_such_action' });
    await post(`${dirUrl}/delivery-policies/prepare`, { action: 'set_did_policy_v2', did: r.did });
    await post(`${dirUrl}/personas/nobody/named/prepare`, {});
    await post(`${dirUrl}/applications/app-x/registration/prepare`, { control_did: r.did, signer_key_id: 'root' });
    const env = { message_id: randomUUID(), to: r.did, timestamp: isoSeconds(Date.now()), payload: { ciphertext_b64: Buffer.from('hi').toString('base64') } };
    const sent = await post(`${relayUrl}/relay`, env);
    assert.equal(sent.status, 202);
    await post(`${relayUrl}/relay`, '[]');
    await post(`${relayUrl}/relay/${enc(r.did)}`, { ...env, message_id: randomUUID(), to: 'did:platform:other' });
    await fetch(`${relayUrl}/relay/limits`);
    const proof = (op: Parameters<typeof proofHeaders>[2], subject: string) => proofHeaders(profile, r, op, subject, { endpoint: cacheUrl, nowMs: Date.now() });
    await fetch(`${cacheUrl}/cache/summary/${enc(r.did)}`, { headers: proof('summary', '*') });
    const pulled = await fetch(`${cacheUrl}/cache/messages/${enc(r.did)}`, { headers: proof('pull', '*') });
    assert.equal(pulled.status, 200);
    await fetch(`${cacheUrl}/cache/message/${enc(r.did)}/${env.message_id}`, { headers: proof('pull', env.message_id) });
    const p = proof('ack', env.message_id);
    const acked = await post(`${cacheUrl}/cache/ack`, ackBody(p, r.did, [env.message_id]));
    assert.equal(acked.status, 200);
    await fetch(`${cacheUrl}/cache/limits`);
    await post(`${cacheUrl}/cache/store`, '{"not json');
    await fetch(`${cacheUrl}/cache/messages/${enc(r.did)}`);
    await fetch(`${cacheUrl}/cache/nothing-here`);
    await fetch(`${cacheUrl}/cache/limits`, { method: 'DELETE' });

    const checkers = { directory: new OpenApiChecker(docs.directory!), relay: new OpenApiChecker(docs.relay!), cache: new OpenApiChecker(docs.cache!) };
    const roleOf = (url: string) => (url.startsWith('/cache') ? 'cache' : url.startsWith('/relay') ? 'relay' : 'directory');
    let checked = 0;
    const statuses = new Set<number>();
    const templates = new Set<string>();
    for (const s of seen) {
      const checker = checkers[roleOf(s.url)];
      const problem = checker.problem(s.method, s.url, s.status, s.body);
      assert.equal(problem, undefined, problem);
      checked++;
      statuses.add(s.status);
      templates.add(`${s.method} ${templateOf(checker.doc, s.url, s.method) ?? '?'} ${s.status}`);
    }
    assert.ok(checked >= 50, `answers checked: ${checked}`);
    for (const status of [200, 202, 400, 404, 405]) assert.ok(statuses.has(status), `a ${status} answer was checked`);
    for (const answer of [
      'get /dids/{did}/history 200',
      'get /blocks/{number} 200',
      'get /persona-operators/{did}/nonce 200',
      'get /delivery-policies/dids/{did} 200',
      'get /policies/v3/{scope}/{id}/nonce 200',
      'get /export/genesis 200',
      'post /dids/{did}/prepare 200',
      'post /dids/{did}/aliases 202',
      'post /register-did/prepare 200',
      'post /register-did 202',
      'get /applications/{application_id} 400',
      'get /personas/{persona} 404',
    ]) {
      assert.ok(templates.has(answer), `${answer} was checked`);
    }
  });

  it("lists each WebSocket route's own refusal codes, each under its status, and nothing else", async () => {
    for (const [role, path, own] of [
      ['relay', '/ws/{did}/{device}', LIVE_UPGRADE_ERRORS],
      ['directory', '/export/stream', FEED_STREAM_UPGRADE_ERRORS],
    ] as const) {
      const doc = (await (await realFetch(`${node.urls[role]}/openapi.json`)).json()) as OpenApiDocument;
      const op = doc.paths[path]!.get as unknown as {
        'x-websocket': boolean;
        responses: Record<string, { content?: Record<string, { schema: { properties: { code: { enum: string[] } } } }> }>;
      };
      assert.equal(op['x-websocket'], true);
      const listed: string[] = [];
      for (const [status, answer] of Object.entries(op.responses)) {
        if (status === '101') continue;
        for (const code of answer.content!['application/json']!.schema.properties.code.enum) {
          assert.equal(ERROR_STATUS[code as ErrorCode], Number(status), `${path}: ${code} under ${status}`);
          listed.push(code);
        }
      }
      assert.deepEqual(listed.sort(), [...new Set(own)].sort(), path);
    }
    const relayDoc = (await (await realFetch(`${node.urls.relay}/openapi.json`)).json()) as OpenApiDocument;
    const ws = relayDoc.paths['/ws/{did}/{device}']!.get!.responses;
    const codesAt = (status: string) => (ws[status]!.content!['application/json']!.schema as { properties: { code: { enum: string[] } } }).properties.code.enum;
    assert.deepEqual(codesAt('401'), ['live_proof_required']);
    assert.deepEqual(codesAt('404').sort(), ['did_not_found', 'live_sessions_disabled', 'not_found']);
    assert.equal(ws['410'], undefined);
  });

  it('requires one of `to` / `recipient` and one of `timestamp` / `created_at` in the envelope, either name', async () => {
    const envelope = {
      message_id: randomUUID(),
      to: 'did:platform:x',
      timestamp: '2026-11-28T00:00:00Z',
      payload: { ciphertext_b64: 'AAAA' },
    };
    const { to, timestamp, ...rest } = envelope;
    for (const [role, path] of [
      ['relay', '/relay'],
      ['cache', '/cache/store'],
    ] as const) {
      const checker = new OpenApiChecker((await (await realFetch(`${node.urls[role]}/openapi.json`)).json()) as OpenApiDocument);
      assert.equal(checker.requestProblem('POST', path, envelope), undefined, role);
      assert.equal(checker.requestProblem('POST', path, { ...rest, recipient: to, created_at: timestamp }), undefined, role);
      assert.equal(checker.requestProblem('POST', path, { ...envelope, recipient: to, created_at: timestamp }), undefined, role);
      assert.match(checker.requestProblem('POST', path, { ...rest, timestamp }) ?? '', /must have required property 'to'/, role);
      assert.match(checker.requestProblem('POST', path, { ...rest, to }) ?? '', /must have required property 'timestamp'/, role);
    }
  });

  it('a body the document does not describe is caught, success and error alike', async () => {
    const res = await realFetch(`${node.urls.directory}/openapi.json`);
    const checker = new OpenApiChecker((await res.json()) as OpenApiDocument);
    assert.equal(checker.problem('GET', '/personas/x.example.com/nonces', 200, { persona: 'x.example.com' })?.includes('operator_did'), true);
    assert.notEqual(checker.problem('POST', '/register-did', 202, { status: 'accepted' }), undefined);
    assert.notEqual(checker.problem('GET', '/resolve/did:platform:x', 404, { error: 'did_not_found' }), undefined);
    assert.equal(
      checker.problem('GET', '/resolve/did:platform:x', 404, { code: 'did_not_found', error: 'did_not_found', message: 'DID not found' }),
      undefined,
    );
  });
});
