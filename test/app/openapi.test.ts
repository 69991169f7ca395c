/**
 * `GET /openapi.json` on every role: an OpenAPI 3.1 document generated from the routes' schemas, listing every
 * route with a success and error responses; every response of a scripted workload over real HTTP (Directory,
 * Relay, Cache on SQLite) validates against the document's schema for its route and status.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Ajv, type ValidateFunction } from 'ajv';
import { makeProfile } from '../../src/protocol/profile.js';
import { ackBody, isoSeconds, proofHeaders, registerRecipientAt } from '../cache/harness.js';
import { httpDirectory } from '../cache/http-support.js';
import { startTestNode, type TestNode } from '../support/network.js';

interface Operation {
  responses: Record<string, { content?: Record<string, { schema: object }> }>;
}
interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
}
interface Seen {
  method: string;
  url: string;
  status: number;
  body: unknown;
}

const profile = makeProfile('platform');
const enc = encodeURIComponent;

/** The document's path template matching `path` (most literal characters first: `/blocks/latest` over `{n}`). */
function templateOf(doc: OpenApiDocument, path: string): string | undefined {
  const matching = Object.keys(doc.paths).filter((t) =>
    new RegExp(`^${t.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`).test(path),
  );
  return matching.sort((a, b) => b.replace(/\{[^}]+\}/g, '').length - a.replace(/\{[^}]+\}/g, '').length)[0];
}

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

  it('is served by every role, lists every route with success and error answers, and the workload\'s answers match it', async () => {
    const docs: Record<string, OpenApiDocument> = {};
    for (const role of ['directory', 'relay', 'cache'] as const) {
      const res = await realFetch(`${node.urls[role]}/openapi.json`);
      assert.equal(res.status, 200);
      const doc = (await res.json()) as OpenApiDocument;
      assert.equal(doc.openapi, '3.1.0');
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          const statuses = Object.keys(op.responses);
          assert.ok(statuses.some((s) => /^2/.test(s)), `${role} ${method} ${path}: a success answer`);
          assert.ok(statuses.some((s) => /^[45]/.test(s)), `${role} ${method} ${path}: error answers`);
        }
      }
      docs[role] = doc;
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

    const ajv = new Ajv({ strict: false, allErrors: true });
    const compiled = new Map<object, ValidateFunction>();
    const roleOf = (url: string) => (url.startsWith('/cache') ? 'cache' : url.startsWith('/relay') ? 'relay' : 'directory');
    let checked = 0;
    const statuses = new Set<number>();
    for (const s of seen) {
      const doc = docs[roleOf(s.url)]!;
      const template = templateOf(doc, s.url);
      // unknown paths and methods (404, 405) have no operation: their body is the §0.6 error body of any route
      const op = template === undefined ? undefined : doc.paths[template]?.[s.method];
      const ref = op ?? Object.values(Object.values(doc.paths)[0]!)[0]!;
      const answer = ref.responses[String(s.status)] ?? ref.responses.default;
      assert.ok(answer !== undefined, `${s.method} ${s.url} ${s.status}: documented`);
      const schema = answer.content?.['application/json']?.schema;
      assert.ok(schema !== undefined, `${s.method} ${s.url} ${s.status}: a JSON schema`);
      let validate = compiled.get(schema);
      if (validate === undefined) {
        validate = ajv.compile(schema);
        compiled.set(schema, validate);
      }
      assert.ok(validate(s.body), `${s.method} ${s.url} ${s.status}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(s.body).slice(0, 300)}`);
      checked++;
      statuses.add(s.status);
    }
    assert.ok(checked >= 20, `answers checked: ${checked}`);
    for (const status of [200, 202, 400, 404, 405]) assert.ok(statuses.has(status), `a ${status} answer was checked`);
  });
});
