/**
 * The served OpenAPI documents as a contract, from both sides, against a live node (Directory, Relay, Cache on
 * SQLite, real HTTP, on each profile): openapi-fetch clients typed with the types openapi-typescript generated
 * from each served document (test/support/openapi-types/, kept equal to the served documents by
 * test/app/openapi-types.test.ts) perform every role's main flows — register, change, resolve (ddn's and W3C's),
 * send, store, retrieve with a proof, acknowledge — with no cast: the flows compile against the generated types
 * (`npm run typecheck`), and the `@ts-expect-error` lines prove what they refuse — also where the `openpayload`
 * types differ from `platform`'s. The same flows run on an `openpayload` node through that profile's own types.
 * Every error answer met carries a code the document enumerates for its route and status.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import createClient, { type Middleware } from 'openapi-fetch';
import { multibaseEd25519 } from '../../src/protocol/keys.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { isoSeconds, proofHeaders, type ProofHeaders, type Recipient } from '../cache/harness.js';
import { didOf, keyOf, kid, signHex } from '../support/directory-flows.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { templateOf, type OpenApiDocument } from '../support/openapi-check.js';
import type { paths as CachePaths } from '../support/openapi-types/cache.js';
import type { paths as DirectoryPaths } from '../support/openapi-types/directory-platform.js';
import type { paths as DirectoryOpenPayload } from '../support/openapi-types/directory-openpayload.js';
import type { paths as RelayOpenPayload } from '../support/openapi-types/relay-openpayload.js';
import type { paths as RelayPaths } from '../support/openapi-types/relay-platform.js';

type Role = 'directory' | 'relay' | 'cache';
type Envelope = RelayPaths['/relay']['post']['requestBody']['content']['application/json'];
type DidDocument = DirectoryPaths['/register-did/prepare']['post']['requestBody']['content']['application/json']['did_document'];
type AckBody = CachePaths['/cache/ack']['post']['requestBody']['content']['application/json'];

/** The `code` of a status's answer of `POST /relay` in a Relay document's types. */
type RelayCode<P extends { '/relay': { post: { responses: Record<number, unknown> } } }, S extends number> = P['/relay']['post']['responses'][S] extends {
  content: { 'application/json': { code: infer C } };
}
  ? C
  : never;
// both profiles answer the Relay's own storage failure 507 insufficient_storage (not a code the profiles differ in)
const _platform507: RelayCode<RelayPaths, 507>[] = ['staging_persist_failed', 'insufficient_storage'];
const _openPayload507: RelayCode<RelayOpenPayload, 507>[] = ['staging_persist_failed', 'insufficient_storage'];
// @ts-expect-error a code neither lists under 507
const _no507: RelayCode<RelayOpenPayload, 507>[] = ['upstream_unavailable'];
// and openpayload takes a DID change without canonical_payload (the deployed clients' form), platform does not
type AliasBody<P extends { '/dids/{did}/aliases': { post: { requestBody: { content: { 'application/json': unknown } } } } }> =
  P['/dids/{did}/aliases']['post']['requestBody']['content']['application/json'];
const deployedForm = { did: 'd', action: 'add_alias', nonce: '0', valid_until: '1', signature: 's', alias: 'a' } as const;
const _openPayloadChange: AliasBody<DirectoryOpenPayload> = deployedForm;
// @ts-expect-error canonical_payload is required on platform
const _platformChange: AliasBody<DirectoryPaths> = deployedForm;

// persona, policy and application writes: each route its own body, its required fields required, no other member
type JsonBody<Op> = Op extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;
type NamedBody = JsonBody<DirectoryPaths['/personas/{persona}/named']['put']>;
type RevokeBody = JsonBody<DirectoryPaths['/personas/{persona}']['delete']>;
type DidPolicyBody = JsonBody<DirectoryPaths['/delivery-policies/dids/{did}']['put']>;
type V3ClearBody = JsonBody<DirectoryPaths['/policies/v3/{scope}/{id}']['delete']>;
type AuthorizationBody = JsonBody<DirectoryPaths['/applications/{application_id}/authorization']['put']>;
const signed = { nonce: '0', valid_until: '1', signer_key_id: 'root', canonical_payload: '0x00', signature: 's' } as const;
const named: NamedBody = { action: 'register_named_persona', operator_did: 'd', controller_keys: ['root'], controller_threshold: 1, ...signed };
const { operator_did: _operator, ...unoperated } = named;
// @ts-expect-error operator_did is required
const _namedNoOperator: NamedBody = unoperated;
// @ts-expect-error a named persona takes no DNS intent
const _namedVerified: NamedBody = { ...named, verification_days: 30 };
// @ts-expect-error a revocation names its persona
const _revokeNoPersona: RevokeBody = { action: 'revoke_persona', ...signed };
// @ts-expect-error a DID's v2 policy write carries its policy
const _didPolicyNone: DidPolicyBody = { did: 'd', action: 'set_did_policy_v2', ...signed };
const _clear: V3ClearBody = { action: 'clear_policy_v3', ...signed };
// @ts-expect-error a v3 clear carries no policy
const _clearWithPolicy: V3ClearBody = { action: 'clear_policy_v3', policy: undefined, ...signed };
const app = { control_signer_key_id: 'root', nonce: 0, canonical_payload: '0x00', control_signature: 's' } as const;
const _link: AuthorizationBody = { action: 'link_did', linked_did: 'd', linked_signer_key_id: 'root', linked_signature: 's', ...app };
// @ts-expect-error linking needs the linked DID's signature
const _linkUnsigned: AuthorizationBody = { action: 'link_did', linked_did: 'd', linked_signer_key_id: 'root', ...app };
// @ts-expect-error a status change carries no domain
const _statusDomain: AuthorizationBody = { action: 'set_status', status: 'active', domain: 'example.com', ...app };

interface Met {
  role: Role;
  method: string;
  path: string;
  status: number;
  body: unknown;
}

const profile = makeProfile('platform');

/** Records every answer a client read. */
function recorder(role: Role, met: Met[]): Middleware {
  return {
    async onResponse({ request, response }) {
      const text = await response.clone().text();
      met.push({
        role,
        method: request.method.toLowerCase(),
        path: new URL(request.url).pathname,
        status: response.status,
        body: text === '' ? undefined : (JSON.parse(text) as unknown),
      });
      return undefined;
    },
  };
}

/** The `POST /cache/ack` body of a signed `ack` proof. */
function ackOf(did: string, proof: ProofHeaders, messageIds: string[]): AckBody {
  return {
    did,
    device_id: '',
    service_id: proof['X-Service-Id'],
    cache_endpoint: proof['X-Cache-Endpoint'],
    key_id: proof['X-Key-Id'],
    timestamp: proof['X-Timestamp'],
    nonce: proof['X-Nonce'],
    signature_b64: proof['X-Signature'],
    message_ids: messageIds,
  };
}

/** The codes the document lists for the error answer `m` (undefined: route or status not documented). */
function listedCodes(doc: OpenApiDocument, m: Met): { template: string | undefined; codes: string[] | undefined; documented: boolean } {
  const template = templateOf(doc, m.path, m.method);
  const op = template === undefined ? undefined : doc.paths[template]![m.method];
  const answer = (op?.responses as Record<string, { content?: Record<string, { schema?: { properties?: { code?: { enum?: string[] } } } }> }> | undefined)?.[
    String(m.status)
  ];
  return { template, codes: answer?.content?.['application/json']?.schema?.properties?.code?.enum, documented: answer !== undefined };
}

/** Each role's served document. */
async function documentsOf(node: TestNode): Promise<Record<Role, OpenApiDocument>> {
  const docs = {} as Record<Role, OpenApiDocument>;
  for (const role of ['directory', 'relay', 'cache'] as const) {
    docs[role] = (await (await fetch(`${node.urls[role]!}/openapi.json`)).json()) as OpenApiDocument;
  }
  return docs;
}

/** Produces blocks until every pooled extrinsic is in a final block. */
function settle(node: TestNode): void {
  while (node.ledger.produceBlock() !== null) {
    // one more block
  }
}

/**
 * Every answer met has a documented route and status, and an error's code is among those the document lists for
 * it; returns the statuses met and how many error answers were checked.
 */
function checkMet(met: readonly Met[], docs: Record<Role, OpenApiDocument>): { statuses: Set<number>; errors: number } {
  const statuses = new Set<number>();
  let errors = 0;
  for (const m of met) {
    const { template, codes, documented } = listedCodes(docs[m.role], m);
    assert.ok(template !== undefined, `${m.role} ${m.method} ${m.path}: a documented route`);
    assert.ok(documented, `${m.role} ${m.method} ${template} ${m.status}: a documented status`);
    statuses.add(m.status);
    if (m.status < 400) continue;
    const code = (m.body as { code?: string }).code;
    assert.ok(code !== undefined && codes?.includes(code), `${m.role} ${m.method} ${template} ${m.status}: ${code} is not among ${JSON.stringify(codes)}`);
    errors++;
  }
  return { statuses, errors };
}

describe('OpenAPI documents as a contract: clients typed by the generated types, against a live node', () => {
  let node: TestNode;
  const met: Met[] = [];
  let docs: Record<Role, OpenApiDocument>;

  before(async () => {
    node = await startTestNode(['--roles', 'directory,relay,cache', '--allow-private-endpoints']);
    await node.identity.ready;
    docs = await documentsOf(node);
  });
  after(async () => {
    await node?.stop();
  });

  it("performs every role's main flows through typed openapi-fetch clients; every error answer's code is one its document lists", async () => {
    const dir = createClient<DirectoryPaths>({ baseUrl: node.urls.directory! });
    const relay = createClient<RelayPaths>({ baseUrl: node.urls.relay! });
    const cache = createClient<CachePaths>({ baseUrl: node.urls.cache! });
    dir.use(recorder('directory', met));
    relay.use(recorder('relay', met));
    cache.use(recorder('cache', met));
    const seed = 91;
    const did = didOf(seed);
    const key = keyOf(seed);
    const cacheUrl = node.urls.cache!;

    // register: prepare, sign, submit
    const document: DidDocument = {
      id: did,
      verificationMethod: [{ id: kid(did, 'key-1'), type: 'Ed25519VerificationKey2020', controller: did, publicKeyMultibase: multibaseEd25519(key.publicKey) }],
      authentication: [kid(did, 'key-1')],
      service: [{ id: kid(did, 'cache'), type: 'PlatformCacheService', serviceEndpoint: [cacheUrl], authorization: [kid(did, 'key-1')] }],
    };
    const prepared = await dir.POST('/register-did/prepare', { body: { did, root_pubkey: multibaseEd25519(key.publicKey, false), did_document: document } });
    assert.equal(prepared.response.status, 200, JSON.stringify(prepared.error));
    const registered = await dir.POST('/register-did', { body: { ...prepared.data!.request, signature: signHex(key, prepared.data!.payload_to_sign) } });
    assert.equal(registered.response.status, 202, JSON.stringify(registered.error));
    assert.equal(registered.data?.status, 'accepted');
    settle(node);

    // change: an alias, prepared, signed and submitted to its own route
    const change = await dir.POST('/dids/{did}/prepare', { params: { path: { did } }, body: { did, action: 'add_alias', alias: 'contract91' } });
    assert.equal(change.response.status, 200, JSON.stringify(change.error));
    const { request } = change.data!;
    const submitted = await dir.POST('/dids/{did}/aliases', {
      params: { path: { did } },
      body: { ...request, action: 'add_alias', alias: 'contract91', signature: signHex(key, change.data!.payload_to_sign) },
    });
    assert.equal(submitted.response.status, 202, JSON.stringify(submitted.error));
    settle(node);
    // @ts-expect-error the route's own field (`alias`) is required
    await dir.POST('/dids/{did}/aliases', { params: { path: { did } }, body: { ...request, action: 'add_alias', signature: 'AA==' } });
    // @ts-expect-error a submit route takes its own action only
    await dir.POST('/dids/{did}/aliases', { params: { path: { did } }, body: { ...request, action: 'AddService', alias: 'x', signature: 'AA==' } });

    // resolve: ddn's, W3C's, the newest block
    const resolved = await dir.GET('/resolve/{did}', { params: { path: { did } } });
    assert.deepEqual(resolved.data?.aliases, ['contract91']);
    const w3c = await dir.GET('/1.0/identifiers/{did}', { params: { path: { did }, query: { versionId: '1' } } });
    assert.equal(w3c.response.status, 200);
    const result = w3c.data;
    assert.ok(result !== undefined && 'didDocumentMetadata' in result, 'a resolution result');
    assert.equal(result.didDocumentMetadata.versionId, '1');
    assert.equal(result.didDocument.id, did);
    const latest = await dir.GET('/blocks/latest');
    assert.equal(typeof latest.data?.number, 'number');
    await dir.GET('/resolve/{did}', { params: { path: { did: 'not-a-did' } } });
    await dir.GET('/resolve/{did}', { params: { path: { did: didOf(92) } } });
    // on platform a service id is a DID URL of the DID itself
    const relative = await dir.POST('/dids/{did}/prepare', {
      params: { path: { did } },
      body: { did, action: 'AddService', service: { id: 'relay', type: 'PlatformRelayService', serviceEndpoint: ['https://x.example'] } },
    });
    assert.equal(relative.error?.code, 'invalid_document');

    // send through the Relay, which stores at the Cache
    const env: Envelope = {
      message_id: randomUUID(),
      to: did,
      timestamp: isoSeconds(Date.now()),
      payload: { ciphertext_b64: Buffer.from('hi').toString('base64') },
    };
    const sent = await relay.POST('/relay', { body: env });
    assert.equal(sent.response.status, 202, JSON.stringify(sent.error));
    assert.equal(sent.data?.delivery_mode, 'cache_fallback');
    const malformed = await relay.POST('/relay', { body: { ...env, message_id: randomUUID(), sender: did, sender_key_id: 'root', sender_signature: 'AAAA' } });
    assert.equal(malformed.response.status, 403);
    assert.equal(malformed.error?.code, 'invalid_sender_signature');
    await relay.POST('/relay', { body: { ...env, message_id: randomUUID(), to: didOf(93) } });
    // @ts-expect-error the envelope's members are closed
    const extra: Envelope = { ...env, message_id: randomUUID(), extra: 1 };
    assert.equal((await relay.POST('/relay', { body: extra })).error?.code, 'unknown_field');
    // @ts-expect-error message_id and payload are required
    await relay.POST('/relay', { body: { to: did, timestamp: env.timestamp } });

    // store at the Cache directly (and again: the first copy stands)
    const stored: Envelope = { ...env, message_id: randomUUID() };
    assert.equal((await cache.POST('/cache/store', { body: stored })).response.status, 202);
    const again = await cache.POST('/cache/store', { body: { ...stored, ttl: '1h' } });
    assert.equal(again.response.status, 202, JSON.stringify(again.error));

    // retrieve with a proof, then acknowledge
    const r: Pick<Recipient, 'did' | 'key' | 'keyId' | 'serviceId'> = { did, key: key, keyId: kid(did, 'key-1'), serviceId: kid(did, 'cache') };
    const pull = proofHeaders(profile, r, 'pull', '*', { endpoint: cacheUrl, nowMs: Date.now() });
    const pulled = await cache.GET('/cache/messages/{did}', { params: { path: { did }, header: pull } });
    assert.equal(pulled.response.status, 200, JSON.stringify(pulled.error));
    assert.deepEqual(pulled.data?.messages.map((m) => m.message_id).sort(), [env.message_id, stored.message_id].sort());
    const replayed = await cache.GET('/cache/messages/{did}', { params: { path: { did }, header: pull } });
    assert.equal(replayed.response.status, 409);
    const { 'X-Signature': _signature, ...unsigned } = pull;
    void _signature;
    // @ts-expect-error the six proof headers are required
    const missing = await cache.GET('/cache/messages/{did}', { params: { path: { did }, header: unsigned } });
    assert.equal(missing.response.status, 400);
    const ack = proofHeaders(profile, r, 'ack', env.message_id, { endpoint: cacheUrl, nowMs: Date.now() });
    const acked = await cache.POST('/cache/ack', { body: ackOf(did, ack, [env.message_id]) });
    assert.equal(acked.response.status, 200, JSON.stringify(acked.error));
    assert.deepEqual(acked.data, { acked: 1, message_ids: [env.message_id] });

    // every answer met: a documented status; an error's code among those the document lists for it
    const { statuses, errors } = checkMet(met, docs);
    assert.ok(errors >= 8, `error answers checked: ${errors}`);
    for (const s of [200, 202, 400, 403, 404, 409]) assert.ok(statuses.has(s), `a ${s} answer was met`);
  });
});

describe('OpenAPI documents as a contract on profile openpayload: the same flows through its own generated types', () => {
  let node: TestNode;
  const met: Met[] = [];
  let docs: Record<Role, OpenApiDocument>;
  const op = makeProfile('openpayload');

  before(async () => {
    node = await startTestNode(['--roles', 'directory,relay,cache', '--allow-private-endpoints', '--profile', 'openpayload']);
    await node.identity.ready;
    docs = await documentsOf(node);
  });
  after(async () => {
    await node?.stop();
  });

  it('registers, changes, resolves, sends, retrieves with a proof and acknowledges; every error code is listed', async () => {
    const dir = createClient<DirectoryOpenPayload>({ baseUrl: node.urls.directory! });
    const relay = createClient<RelayOpenPayload>({ baseUrl: node.urls.relay! });
    const cache = createClient<CachePaths>({ baseUrl: node.urls.cache! });
    dir.use(recorder('directory', met));
    relay.use(recorder('relay', met));
    cache.use(recorder('cache', met));
    const seed = 94;
    const did = didOf(seed, op.p);
    const key = keyOf(seed);
    const cacheUrl = node.urls.cache!;

    const document: DirectoryOpenPayload['/register-did/prepare']['post']['requestBody']['content']['application/json']['did_document'] = {
      id: did,
      verificationMethod: [{ id: kid(did, 'key-1'), type: 'Ed25519VerificationKey2020', controller: did, publicKeyMultibase: multibaseEd25519(key.publicKey) }],
      authentication: [kid(did, 'key-1')],
      service: [{ id: kid(did, 'cache'), type: op.cacheServiceType, serviceEndpoint: [cacheUrl], authorization: [kid(did, 'key-1')] }],
    };
    const prepared = await dir.POST('/register-did/prepare', { body: { did, root_pubkey: multibaseEd25519(key.publicKey, false), did_document: document } });
    assert.equal(prepared.response.status, 200, JSON.stringify(prepared.error));
    const registered = await dir.POST('/register-did', { body: { ...prepared.data!.request, signature: signHex(key, prepared.data!.payload_to_sign) } });
    assert.equal(registered.response.status, 202, JSON.stringify(registered.error));
    settle(node);

    const change = await dir.POST('/dids/{did}/prepare', { params: { path: { did } }, body: { did, action: 'add_alias', alias: 'contract94' } });
    assert.equal(change.response.status, 200, JSON.stringify(change.error));
    const submitted = await dir.POST('/dids/{did}/aliases', {
      params: { path: { did } },
      body: { ...change.data!.request, action: 'add_alias', alias: 'contract94', signature: signHex(key, change.data!.payload_to_sign) },
    });
    assert.equal(submitted.response.status, 202, JSON.stringify(submitted.error));
    settle(node);
    const resolved = await dir.GET('/resolve/{did}', { params: { path: { did } } });
    assert.deepEqual(resolved.data?.aliases, ['contract94']);
    await dir.GET('/resolve/{did}', { params: { path: { did: didOf(95, op.p) } } });

    const env: Envelope = {
      message_id: randomUUID(),
      to: did,
      timestamp: isoSeconds(Date.now()),
      payload: { ciphertext_b64: Buffer.from('hi').toString('base64') },
    };
    const sent = await relay.POST('/relay', { body: env });
    assert.equal(sent.response.status, 202, JSON.stringify(sent.error));
    // a malformed sender signature is the deployed clients' 400 here (403 on platform)
    const malformed = await relay.POST('/relay', { body: { ...env, message_id: randomUUID(), sender: did, sender_key_id: 'root', sender_signature: 'AAAA' } });
    assert.equal(malformed.response.status, 400);
    assert.equal(malformed.error?.code, 'invalid_envelope');

    const r: Pick<Recipient, 'did' | 'key' | 'keyId' | 'serviceId'> = { did, key, keyId: kid(did, 'key-1'), serviceId: kid(did, 'cache') };
    const pull = proofHeaders(op, r, 'pull', '*', { endpoint: cacheUrl, nowMs: Date.now() });
    const pulled = await cache.GET('/cache/messages/{did}', { params: { path: { did }, header: pull } });
    assert.equal(pulled.response.status, 200, JSON.stringify(pulled.error));
    assert.deepEqual(
      pulled.data?.messages.map((m) => m.message_id),
      [env.message_id],
    );
    const ack = proofHeaders(op, r, 'ack', env.message_id, { endpoint: cacheUrl, nowMs: Date.now() });
    const acked = await cache.POST('/cache/ack', { body: ackOf(did, ack, [env.message_id]) });
    assert.deepEqual(acked.data, { acked: 1, message_ids: [env.message_id] });

    const { errors } = checkMet(met, docs);
    assert.ok(errors >= 2, `error answers checked: ${errors}`);
  });
});
