/**
 * The served OpenAPI documents as a contract, from both sides, against a live node (Directory, Relay, Cache on
 * SQLite, real HTTP): openapi-typescript generates each role's types from its served document and they compile,
 * with a typed openapi-fetch use of the main routes (the Cache's six proof headers required); openapi-fetch clients
 * then perform every role's main flows — register, change, resolve (ddn's and W3C's), send, store, retrieve with a
 * proof, acknowledge — and every error answer met carries a code the document enumerates for its route and status.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import createClient, { type Client } from 'openapi-fetch';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { makeProfile } from '../../src/protocol/profile.js';
import { ackBody, isoSeconds, proofHeaders, recipientDocument, type Recipient } from '../cache/harness.js';
import { didOf, keyOf, kid, mutate, registerDid } from '../support/directory-flows.js';
import type { DirectoryHarness } from '../support/directory-harness.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { templateOf, type OpenApiDocument } from '../support/openapi-check.js';

type Body = Record<string, unknown>;
type Role = 'directory' | 'relay' | 'cache';

/** Untyped at run time (the types are checked on their own, below): any path, JSON in and out. */
interface LooseOperation {
  parameters: { path?: Record<string, string>; query?: Record<string, string>; header?: Record<string, string> };
  requestBody?: { content: { 'application/json': Body } };
  responses: Record<number, { content: { 'application/json': Body } }>;
}
type LoosePaths = Record<string, { get: LooseOperation; post: LooseOperation; put: LooseOperation; patch: LooseOperation; delete: LooseOperation }>;

interface Met {
  role: Role;
  method: string;
  path: string;
  status: number;
  body: unknown;
}

const profile = makeProfile('platform');
const require = createRequire(import.meta.url);

describe('OpenAPI documents as a contract: generated types and clients against a live node', () => {
  let node: TestNode;
  let tmp: string;
  const docs = {} as Record<Role, OpenApiDocument>;
  const clients = {} as Record<Role, Client<LoosePaths>>;
  const met: Met[] = [];

  before(async () => {
    node = await startTestNode(['--roles', 'directory,relay,cache', '--allow-private-endpoints']);
    await node.identity.ready;
    tmp = mkdtempSync(join(tmpdir(), 'ddn-openapi-'));
    for (const role of ['directory', 'relay', 'cache'] as const) {
      docs[role] = (await (await fetch(`${node.urls[role]!}/openapi.json`)).json()) as OpenApiDocument;
      const client = createClient<LoosePaths>({ baseUrl: node.urls[role]! });
      // every answer, as the client read it
      client.use({
        async onResponse({ request, response }) {
          const text = await response.clone().text();
          const url = new URL(request.url);
          met.push({
            role,
            method: request.method.toLowerCase(),
            path: url.pathname,
            status: response.status,
            body: text === '' ? undefined : (JSON.parse(text) as unknown),
          });
          return undefined;
        },
      });
      clients[role] = client;
    }
  });
  after(async () => {
    await node?.stop();
    if (tmp !== undefined) rmSync(tmp, { recursive: true, force: true });
  });

  it("generates each role's types, which compile, and a typed client needs the Cache's proof headers", async () => {
    for (const role of ['directory', 'relay', 'cache'] as const) {
      const source = astToString(await openapiTS(docs[role] as unknown as Parameters<typeof openapiTS>[0]));
      writeFileSync(join(tmp, `${role}.ts`), source);
    }
    const proof = `{ 'X-Service-Id': 's', 'X-Cache-Endpoint': 'e', 'X-Key-Id': 'k', 'X-Timestamp': 't', 'X-Nonce': 'n', 'X-Signature': 'x' }`;
    writeFileSync(
      join(tmp, 'use.ts'),
      `import createClient from 'openapi-fetch';
import type { paths as Directory } from './directory';
import type { paths as Relay } from './relay';
import type { paths as Cache } from './cache';
const d = createClient<Directory>({ baseUrl: 'http://d' });
const r = createClient<Relay>({ baseUrl: 'http://r' });
const c = createClient<Cache>({ baseUrl: 'http://c' });
type Envelope = Relay['/relay']['post']['requestBody']['content']['application/json'];
// @ts-expect-error the envelope's members are closed
export const extra: Envelope = { message_id: 'm', to: 'x', timestamp: 't', payload: {}, extra: 1 };
// @ts-expect-error message_id and payload are required
export const bare: Envelope = { to: 'x' };
export async function flows(): Promise<unknown[]> {
  const out: unknown[] = [];
  out.push((await d.GET('/resolve/{did}', { params: { path: { did: 'did:platform:x' } } })).data?.root_pubkey);
  out.push((await d.GET('/blocks/latest')).data?.number);
  out.push((await d.GET('/1.0/identifiers/{did}', { params: { path: { did: 'did:platform:x' }, query: { versionId: '1' } } })).response.status);
  out.push((await d.POST('/register-did/prepare', { body: { did: 'x', root_pubkey: 'y', did_document: { id: 'x' } } })).data?.payload_to_sign);
  const sent = await r.POST('/relay', { body: { message_id: 'm', to: 'did:platform:x', timestamp: 't', payload: { ciphertext_b64: 'AA==' } } });
  out.push(sent.data?.delivery_mode, sent.error?.code);
  const pulled = await c.GET('/cache/messages/{did}', { params: { path: { did: 'did:platform:x' }, header: ${proof} } });
  out.push(pulled.data?.messages, pulled.error?.code);
  // @ts-expect-error the proof headers are required
  out.push(await c.GET('/cache/messages/{did}', { params: { path: { did: 'did:platform:x' } } }));
  return out;
}
`,
    );
    const program = ts.createProgram([join(tmp, 'use.ts')], {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ['lib.es2022.d.ts'],
      types: ['node'],
      typeRoots: [join(process.cwd(), 'node_modules/@types')],
      baseUrl: tmp,
      paths: { 'openapi-fetch': [join(dirname(require.resolve('openapi-fetch')), 'index.d.mts')] },
    });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    assert.deepEqual(problems, []);
  });

  it("performs every role's main flows through openapi-fetch; every error answer's code is one its document lists", async () => {
    const dir = clients.directory;
    // the SDK-free flows of test/support drive the Directory through the generated client
    const harness: Pick<DirectoryHarness, 'call' | 'settle' | 'profile'> = {
      profile,
      async call(method, url, payload) {
        const m = method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
        const res = await dir.request(m, url, payload === undefined ? {} : { body: payload as Body });
        return { status: res.response.status, body: (res.data ?? res.error) as Body };
      },
      settle() {
        while (node.ledger.produceBlock() !== null) {
          // every pooled extrinsic is in a final block
        }
      },
    };
    const seed = 91;
    const did = didOf(seed);
    const keys = { key: keyOf(seed), key2: keyOf(seed + 50), key3: keyOf(seed + 100), key4: keyOf(seed + 150) };
    const cacheUrl = node.urls.cache!;
    // register, change
    await registerDid(harness as DirectoryHarness, seed, { did, key: keys.key, document: recipientDocument(did, keys, { cacheEndpoints: [cacheUrl] }) });
    await mutate(harness as DirectoryHarness, did, keys.key, 'add_alias', { alias: 'contract91' });
    const r: Recipient = { did, ...keys, keyId: kid(did, 'key-1'), serviceId: kid(did, 'cache'), archiveServiceId: kid(did, 'archive'), alias: 'contract91' };
    // resolve: ddn's and W3C's, the newest block
    const resolved = await dir.GET('/resolve/{did}', { params: { path: { did } } });
    assert.deepEqual(resolved.data?.aliases, ['contract91']);
    const w3c = await dir.GET('/1.0/identifiers/{did}', { params: { path: { did }, query: { versionId: '2' } }, parseAs: 'text' });
    assert.equal(w3c.response.status, 200);
    assert.equal((await dir.GET('/blocks/latest')).response.status, 200);
    await dir.GET('/resolve/{did}', { params: { path: { did: 'not-a-did' } } });
    await dir.GET('/resolve/{did}', { params: { path: { did: didOf(92) } } });
    await dir.POST('/dids/{did}/prepare', {
      params: { path: { did } },
      body: { did, action: 'AddService', service: { id: 'relay', type: 'T', serviceEndpoint: ['https://x.example'] } },
    });

    // send through the Relay, which stores at the Cache
    const env = { message_id: randomUUID(), to: did, timestamp: isoSeconds(Date.now()), payload: { ciphertext_b64: Buffer.from('hi').toString('base64') } };
    const sent = await clients.relay.POST('/relay', { body: env });
    assert.equal(sent.response.status, 202, JSON.stringify(sent.error));
    await clients.relay.POST('/relay', { body: { ...env, message_id: randomUUID(), sender: did, sender_key_id: 'root', sender_signature: 'AAAA' } });
    await clients.relay.POST('/relay', { body: { ...env, message_id: randomUUID(), to: didOf(93) } });
    // store at the Cache directly (and a conflicting resend)
    const stored = { ...env, message_id: randomUUID() };
    assert.equal((await clients.cache.POST('/cache/store', { body: stored })).response.status, 202);
    await clients.cache.POST('/cache/store', { body: { ...stored, ttl: '1h' } });
    // retrieve with a proof, then acknowledge
    const pull = proofHeaders(profile, r, 'pull', '*', { endpoint: cacheUrl, nowMs: Date.now() });
    const pulled = await clients.cache.GET('/cache/messages/{did}', { params: { path: { did }, header: pull } });
    assert.equal(pulled.response.status, 200, JSON.stringify(pulled.error));
    assert.equal((pulled.data?.messages as unknown[]).length, 2);
    await clients.cache.GET('/cache/messages/{did}', { params: { path: { did }, header: pull } });
    await clients.cache.GET('/cache/messages/{did}', { params: { path: { did }, header: { ...pull, 'X-Signature': undefined as unknown as string } } });
    const ack = proofHeaders(profile, r, 'ack', env.message_id, { endpoint: cacheUrl, nowMs: Date.now() });
    const acked = await clients.cache.POST('/cache/ack', { body: ackBody(ack, did, [env.message_id]) });
    assert.equal(acked.response.status, 200, JSON.stringify(acked.error));

    // every answer met: a documented status; an error's code among those the document lists for it
    const statuses = new Set<number>();
    let errors = 0;
    for (const m of met) {
      const doc = docs[m.role];
      const template = templateOf(doc, m.path, m.method);
      assert.ok(template !== undefined, `${m.role} ${m.method} ${m.path}: a documented route`);
      const responses = (
        doc.paths[template]![m.method] as {
          responses: Record<string, { content?: Record<string, { schema?: { properties?: { code?: { enum?: string[] } } } }> }>;
        }
      ).responses;
      const answer = responses[String(m.status)];
      assert.ok(answer !== undefined, `${m.role} ${m.method} ${template} ${m.status}: a documented status`);
      statuses.add(m.status);
      if (m.status < 400 || template === '/1.0/identifiers/{did}') continue;
      const codes = answer.content?.['application/json']?.schema?.properties?.code?.enum;
      const code = (m.body as Body).code as string;
      assert.ok(codes?.includes(code), `${m.role} ${m.method} ${template} ${m.status}: ${code} is not among ${JSON.stringify(codes)}`);
      errors++;
    }
    assert.ok(errors >= 6, `error answers checked: ${errors}`);
    for (const s of [200, 202, 400, 403, 404, 409]) assert.ok(statuses.has(s), `a ${s} answer was met`);
  });
});
