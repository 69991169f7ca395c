/**
 * The W3C DID Resolution HTTP(S) binding (`GET /1.0/identifiers/{did}`) over real HTTP on loopback, against a
 * real SQLite ledger: representations, W3C error types and statuses, deactivated and deleted DIDs, historical
 * resolution by versionId and versionTime, DID URL dereferencing (fragments, `?service=` 303). Every answer is
 * also judged by an independent checker written from the W3C texts (w3c-checker.ts) and against the route's
 * OpenAPI entry (test/support/contract-check.ts).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { kid, keyOf, mutate, registerDid, vmOf } from '../support/directory-flows.js';
import { multibaseEd25519 } from '../../src/protocol/keys.js';
import { checkContract, stopChecking } from '../support/contract-check.js';
import { documentProblems, metadataProblems, resolutionProblems, type Json } from './w3c-checker.js';

const enc = encodeURIComponent;

interface Answer {
  status: number;
  type: string | null;
  location: string | null;
  body: Json;
  text: string;
}

describe('W3C DID Resolution: GET /1.0/identifiers/{did}', () => {
  let h: DirectoryHarness;
  let base: string;

  async function get(did: string, opts: { query?: string; accept?: string } = {}): Promise<Answer> {
    const res = await fetch(`${base}/1.0/identifiers/${enc(did)}${opts.query ?? ''}`, {
      headers: opts.accept === undefined ? {} : { accept: opts.accept },
      redirect: 'manual',
    });
    const text = await res.text();
    return {
      status: res.status,
      type: res.headers.get('content-type'),
      location: res.headers.get('location'),
      text,
      body: text === '' ? {} : (JSON.parse(text) as Json),
    };
  }

  /** A resolution (`application/did-resolution`) that both checkers accept. */
  async function resolved(did: string, query = '', status = 200): Promise<Answer> {
    const a = await get(did, { query, accept: 'application/did-resolution' });
    assert.equal(a.status, status, a.text);
    assert.equal(a.type, 'application/did-resolution');
    assert.deepEqual(resolutionProblems(a.status, a.type, a.body, did), []);
    return a;
  }

  async function failed(did: string, status: number, type: string, opts: { query?: string; accept?: string } = {}): Promise<Answer> {
    const a = await get(did, opts);
    assert.equal(a.status, status, a.text);
    const error = ((a.body.didResolutionMetadata ?? a.body.dereferencingMetadata) as Json).error as Json;
    assert.equal(error.type, `https://www.w3.org/ns/did#${type}`);
    if (a.body.didResolutionMetadata !== undefined) assert.deepEqual(resolutionProblems(a.status, a.type, a.body, did), []);
    return a;
  }

  before(async () => {
    h = await startDirectory();
    await h.server.fastify.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(h.server.fastify.server.address() as AddressInfo).port}`;
    // every answer read, in each W3C media type, against the route's OpenAPI entry
    await checkContract([base]);
  });
  after(async () => {
    await h.close();
    stopChecking([base]);
  });

  it('a registered DID: the resolution result (also without Accept), the bare document, JSON-LD with contexts', async () => {
    const r = await registerDid(h, 41);
    const a = await resolved(r.did);
    const doc = a.body.didDocument as Json;
    assert.deepEqual(doc['@context'], [
      'https://www.w3.org/ns/did/v1',
      'https://w3id.org/security/multikey/v1',
      'https://w3id.org/security/suites/ed25519-2020/v1',
    ]);
    assert.deepEqual(doc.verificationMethod, [
      { id: kid(r.did, 'root'), type: 'Multikey', controller: r.did, publicKeyMultibase: multibaseEd25519(r.key.publicKey) },
      vmOf(r.did, 'key-1', r.key),
    ]);
    assert.deepEqual(doc.authentication, [kid(r.did, 'root'), kid(r.did, 'key-1')]);
    assert.deepEqual(doc.assertionMethod, [kid(r.did, 'root')]);
    const meta = a.body.didDocumentMetadata as Json;
    const block = await h.call('GET', '/blocks/latest');
    const at = (block.body.timestamp_iso as string).replace(/\.[0-9]{3}Z$/, 'Z');
    assert.deepEqual(meta, { created: at, updated: at, deactivated: false, versionId: '1' });

    const none = await get(r.did);
    assert.equal(none.status, 200);
    assert.equal(none.type, 'application/did-resolution');
    assert.deepEqual(none.body, a.body);

    const bare = await get(r.did, { accept: 'application/did+json' });
    assert.equal(bare.status, 200);
    assert.equal(bare.type, 'application/did+json');
    assert.equal(bare.body['@context'], undefined);
    assert.deepEqual(documentProblems(bare.body, r.did, false), []);
    const ld = await get(r.did, { accept: 'text/html;q=0.9, application/did+ld+json' });
    assert.equal(ld.type, 'application/did+ld+json');
    assert.deepEqual(ld.body, doc);
    assert.deepEqual(documentProblems(ld.body, r.did, true), []);
    assert.equal((await get(r.did, { accept: '*/*' })).type, 'application/did-resolution');
    await failed(r.did, 406, 'REPRESENTATION_NOT_SUPPORTED', { accept: 'application/json' });
    await failed(r.did, 406, 'REPRESENTATION_NOT_SUPPORTED', { accept: 'application/did+json;q=0, text/html' });
  });

  it('errors: malformed 400, another method 501, unknown 404, bad options 400 — each a resolution result', async () => {
    await failed('not-a-did', 400, 'INVALID_DID');
    await failed('did:platform:0OIl', 400, 'INVALID_DID');
    await failed('did:web:example.com', 501, 'METHOD_NOT_SUPPORTED');
    await failed('did:platform:1111111111111111111111', 404, 'NOT_FOUND');
    const r = await registerDid(h, 42);
    for (const query of [
      '?versionId=0',
      '?versionId=x',
      '?versionTime=2026-01-01',
      '?versionTime=2026-02-30T00:00:00Z',
      '?versionTime=2026-01-01T00:00:00.5Z',
      '?relativeRef=/x',
    ]) {
      await failed(r.did, 400, 'INVALID_OPTIONS', { query });
    }
    await failed(r.did, 404, 'NOT_FOUND', { query: '?versionId=9' });
    await failed(r.did, 404, 'NOT_FOUND', { query: '?versionTime=2000-01-01T00:00:00Z' });
    const d = await failed(r.did, 404, 'NOT_FOUND', { query: '?service=nope', accept: 'application/did-url-dereferencing' });
    assert.equal(d.type, 'application/did-url-dereferencing');
    assert.deepEqual(d.body.contentMetadata, {});
    assert.equal(d.body.contentStream, null);
  });

  it('history: versionId and versionTime answer the document as it was, with next version and update', async () => {
    const r = await registerDid(h, 43);
    const v1 = await resolved(r.did);
    h.clock.advance(5000);
    const key2 = keyOf(44);
    await mutate(h, r.did, r.key, 'AddVerificationMethod', { verification_method: vmOf(r.did, 'key-2', key2) });
    h.clock.advance(5000);
    await mutate(h, r.did, r.key, 'UpdateRootPubkey', { new_root_pubkey: multibaseEd25519(key2.publicKey) });
    const now = await resolved(r.did);
    const m1 = v1.body.didDocumentMetadata as Json;
    const m3 = now.body.didDocumentMetadata as Json;
    assert.equal(m3.versionId, '3');
    assert.equal(m3.created, m1.created);

    const old = await resolved(r.did, '?versionId=1');
    assert.deepEqual(old.body.didDocument, v1.body.didDocument);
    const mOld = old.body.didDocumentMetadata as Json;
    const v2 = await resolved(r.did, '?versionId=2');
    const m2 = v2.body.didDocumentMetadata as Json;
    assert.deepEqual(mOld, { ...m1, nextUpdate: m2.updated, nextVersionId: '2' });
    assert.equal(m2.nextVersionId, '3');
    assert.equal(m2.nextUpdate, m3.updated);
    assert.equal(((v2.body.didDocument as Json).verificationMethod as Json[])[0]!.publicKeyMultibase, multibaseEd25519(r.key.publicKey));
    assert.equal(((now.body.didDocument as Json).verificationMethod as Json[])[0]!.publicKeyMultibase, multibaseEd25519(key2.publicKey));

    // versionTime: the version in force at that second (its own `updated` selects it)
    assert.deepEqual((await resolved(r.did, `?versionTime=${m2.updated as string}`)).body, v2.body);
    assert.deepEqual((await resolved(r.did, `?versionTime=${m1.updated as string}`)).body, old.body);
    assert.deepEqual((await resolved(r.did, '?versionTime=2999-01-01T00:00:00Z')).body.didDocument, now.body.didDocument);
    // the options may also come inside the encoded DID URL
    assert.deepEqual((await get(`${r.did}?versionId=2`)).body, v2.body);
  });

  it('deactivated: 410 with the document and deactivated true; deleted: 410 without one; history still resolves', async () => {
    const r = await registerDid(h, 45);
    await mutate(h, r.did, r.key, 'deactivate_did');
    const a = await resolved(r.did, '', 410);
    assert.equal((a.body.didDocumentMetadata as Json).deactivated, true);
    assert.equal((a.body.didDocument as Json).id, r.did);
    const bare = await get(r.did, { accept: 'application/did+json' });
    assert.equal(bare.status, 410);
    assert.equal(bare.body.id, r.did);
    assert.equal((await resolved(r.did, '?versionId=1')).status, 200);

    const g = await registerDid(h, 46);
    await mutate(h, g.did, g.key, 'delete_did');
    const gone = await resolved(g.did, '', 410);
    assert.equal(gone.body.didDocument, null);
    assert.equal((gone.body.didDocumentMetadata as Json).deactivated, true);
    assert.deepEqual(metadataProblems(gone.body.didDocumentMetadata), []);
    const first = await resolved(g.did, '?versionId=1');
    assert.equal((first.body.didDocument as Json).id, g.did);
    assert.equal((first.body.didDocumentMetadata as Json).nextUpdate, (gone.body.didDocumentMetadata as Json).updated);
  });

  it('DID URL dereferencing: a fragment selects a method or service; ?service= answers 303 with Location', async () => {
    const r = await registerDid(h, 47);
    const service = { id: kid(r.did, 'relay'), type: 'PlatformRelayService', serviceEndpoint: ['https://relay.example/inbox'] };
    await mutate(h, r.did, r.key, 'AddService', { service });

    const vm = await get(`${r.did}#key-1`, { accept: 'application/did-url-dereferencing' });
    assert.equal(vm.status, 200, vm.text);
    assert.equal(vm.type, 'application/did-url-dereferencing');
    assert.deepEqual(vm.body.contentStream, vmOf(r.did, 'key-1', r.key));
    assert.deepEqual(vm.body.dereferencingMetadata, { contentType: 'application/did+json' });
    const bare = await get(`${r.did}#relay`, { accept: 'application/did+json' });
    assert.deepEqual(bare.body, service);
    assert.equal((await get(`${r.did}#root`)).status, 200);
    await failed(`${r.did}#nothing`, 404, 'NOT_FOUND', { accept: 'application/did-url-dereferencing' });

    const redirect = await get(r.did, { query: '?service=relay&relativeRef=%2Fresume.pdf' });
    assert.equal(redirect.status, 303);
    assert.equal(redirect.location, 'https://relay.example/inbox/resume.pdf');
    assert.equal(redirect.text, '');
    const plain = await get(`${r.did}?service=relay`);
    assert.equal(plain.status, 303);
    assert.equal(plain.location, 'https://relay.example/inbox');
    const result = await get(r.did, { query: '?service=relay', accept: 'application/did-url-dereferencing' });
    assert.equal(result.status, 200);
    assert.equal(result.body.contentStream, 'https://relay.example/inbox');
    await failed(r.did, 404, 'NOT_FOUND', { query: '?service=files' });
    await failed(`${r.did}/some/path`, 404, 'NOT_FOUND');

    // a whole DID document through dereferencing carries the document metadata
    const whole = await get(r.did, { accept: 'application/did-url-dereferencing' });
    assert.equal(whole.status, 200);
    assert.deepEqual(documentProblems(whole.body.contentStream, r.did, true), []);
    assert.equal((whole.body.contentMetadata as Json).versionId, '2');
  });

  it('is in the OpenAPI document with its W3C statuses and media types', async () => {
    const doc = (await h.call('GET', '/openapi.json')).body as { paths: Record<string, Record<string, { responses: Record<string, { content?: Json }> }>> };
    const op = doc.paths['/1.0/identifiers/{did}']?.get;
    assert.ok(op);
    for (const s of ['200', '303', '400', '404', '406', '410', '500', '501']) assert.ok(op.responses[s], s);
    assert.ok(op.responses['200']!.content!['application/did-resolution']);
    assert.ok(op.responses['303']!.content!['text/uri-list']);
  });
});
