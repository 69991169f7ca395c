/** DID registration (http-api.md §4): prepare shape and checks in order, submit checks, duplicates, profiles. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { to0x, toBase64, toHex, utf8 } from '../../src/base/bytes.js';
import { documentHash } from '../../src/protocol/document.js';
import { parseDidDocument } from '../../src/protocol/document-json.js';
import { multibaseEd25519 } from '../../src/protocol/keys.js';
import { registrationSigningBytes } from '../../src/protocol/payloads/registration.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import {
  assertError,
  didOf,
  docOf,
  kaOf,
  keyOf,
  kid,
  prepareRegistration,
  registerDid,
  registrationSubmitBody,
  resolve,
  signHex,
  vmOf,
} from '../support/directory-flows.js';

type Body = Record<string, unknown>;

describe('POST /register-did/prepare', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  it('answers exactly the §4.1 shape, echoing did, root_pubkey and did_document unchanged', async () => {
    const did = didOf(1);
    const key = keyOf(1);
    // odd but valid forms: empty arrays, a string serviceEndpoint, a null authorization, a bare-hex root key
    const document = {
      id: did,
      verificationMethod: [vmOf(did, 'key-1', key)],
      authentication: [],
      keyAgreement: [kaOf(did, 'ka', 1)],
      service: [{ id: kid(did, 'relay'), type: 'PlatformRelayService', serviceEndpoint: 'https://relay.example', authorization: null }],
    };
    const sent = { did, root_pubkey: toHex(key.publicKey).toUpperCase(), did_document: document, alias: '  Sales.Group  ' };
    const snapshot = structuredClone(sent);
    const res = await h.call('POST', '/register-did/prepare', sent);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body).sort(), ['canonical_payload', 'document_hash', 'expiry_ms', 'extrinsic', 'payload_to_sign', 'request']);
    assert.equal('nonce_domain' in res.body, false);
    const expiry = h.clock.nowMs() + 300_000;
    const request = res.body.request as Body;
    assert.deepEqual(Object.keys(request).sort(), ['alias', 'did', 'did_document', 'root_pubkey', 'timestamp']);
    assert.equal(request.did, snapshot.did);
    assert.equal(request.root_pubkey, snapshot.root_pubkey);
    assert.deepEqual(request.did_document, snapshot.did_document);
    assert.equal(request.alias, 'sales.group');
    assert.equal(request.timestamp, `v2:0:${expiry}`);
    assert.equal(res.body.expiry_ms, String(expiry));
    assert.equal(res.body.extrinsic, 'register_with_proof_v2');

    const hash = documentHash(parseDidDocument(document, did));
    assert.equal(res.body.document_hash, to0x(hash));
    const expected = registrationSigningBytes(h.profile, {
      did,
      rootPubkey: key.publicKey,
      alias: 'sales.group',
      documentHash: hash,
      expiryMs: BigInt(expiry),
    });
    assert.equal(res.body.payload_to_sign, to0x(expected));
    assert.equal(res.body.canonical_payload, res.body.payload_to_sign);
    assert.ok((res.body.payload_to_sign as string).startsWith(`0x${toHex(utf8('platform:register:v2|'))}`));
  });

  it('has no alias key in request when no alias was sent, and honours expiry_ms', async () => {
    const did = didOf(2);
    const key = keyOf(2);
    for (const expiry of [String(h.clock.nowMs() + 3_600_000), h.clock.nowMs() + 1]) {
      const res = await h.call('POST', '/register-did/prepare', { did, root_pubkey: to0x(key.publicKey), did_document: docOf(did, key), expiry_ms: expiry });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const request = res.body.request as Body;
      assert.deepEqual(Object.keys(request).sort(), ['did', 'did_document', 'root_pubkey', 'timestamp']);
      assert.equal(request.timestamp, `v2:0:${expiry}`);
      assert.equal(res.body.expiry_ms, String(expiry));
    }
  });

  it('runs its checks in the §4.1 order', async () => {
    const taken = await registerDid(h, 3, { alias: 'taken' });
    await registerDid(h, 4, { alias: 'also-taken' });
    const did = didOf(5);
    const key = keyOf(5);
    const good = { did, root_pubkey: multibaseEd25519(key.publicKey), did_document: docOf(did, key), alias: 'free', expiry_ms: String(h.clock.nowMs() + 1000) };
    const cases: [Body, number, string][] = [
      [{ ...good, did: 'did:Platform:8C2kCzsB2fJy9MiZos1mS', root_pubkey: 'x', did_document: {}, alias: '!' }, 400, 'invalid_did'],
      [{ ...good, did: 'did:platform:device:8C2kCzsB2fJy9MiZos1mS' }, 400, 'invalid_did'],
      [{ ...good, did: 'did:platform:0OIl0OIl0OIl0OIl0OIl' }, 400, 'invalid_did'],
      [{ ...good, did: 'did:platform:short' }, 400, 'invalid_did'],
      [{ ...good, did: 42 }, 400, 'invalid_did'],
      [{ ...good, root_pubkey: 'zNope', did_document: {}, alias: '!' }, 400, 'invalid_root_pubkey'],
      [{ ...good, root_pubkey: `0x${'00'.repeat(31)}` }, 400, 'invalid_root_pubkey'],
      [{ ...good, root_pubkey: undefined }, 400, 'invalid_root_pubkey'],
      [{ ...good, did_document: { ...docOf(did, key), id: didOf(6) }, alias: '!' }, 400, 'invalid_document'],
      [{ ...good, did_document: { ...docOf(did, key), alsoKnownAs: [] } }, 400, 'invalid_document'],
      [{ ...good, did_document: undefined }, 400, 'invalid_document'],
      [{ ...good, alias: 'not valid!', expiry_ms: '1' }, 400, 'invalid_alias'],
      [{ ...good, alias: 'a'.repeat(65) }, 400, 'invalid_alias'],
      [{ ...good, alias: 17 }, 400, 'invalid_alias'],
      // the alias of another DID, even for a DID that already exists: alias_taken comes first
      [{ ...good, did: taken.did, did_document: docOf(taken.did, key), alias: 'ALSO-TAKEN', expiry_ms: '1' }, 409, 'alias_taken'],
      [{ ...good, alias: ' Taken ' }, 409, 'alias_taken'],
      [
        { ...good, did: taken.did, root_pubkey: multibaseEd25519(taken.key.publicKey), did_document: docOf(taken.did, taken.key), expiry_ms: '1' },
        409,
        'did_already_exists',
      ],
      [{ ...good, expiry_ms: String(h.clock.nowMs()) }, 400, 'invalid_expiry'],
      [{ ...good, expiry_ms: String(h.clock.nowMs() + 3_600_001) }, 400, 'invalid_expiry'],
      [{ ...good, expiry_ms: 'soon' }, 400, 'invalid_expiry'],
    ];
    for (const [body, status, code] of cases) {
      assertError(await h.call('POST', '/register-did/prepare', body), status, code);
    }
    assert.equal((await h.call('POST', '/register-did/prepare', good)).status, 200);
  });

  it('refuses @context, with details.reason unsupported_key', async () => {
    const did = didOf(7);
    const key = keyOf(7);
    const res = await h.call('POST', '/register-did/prepare', {
      did,
      root_pubkey: multibaseEd25519(key.publicKey),
      did_document: { '@context': 'https://www.w3.org/ns/did/v1', ...docOf(did, key) },
    });
    assertError(res, 400, 'invalid_document');
    assert.equal((res.body.details as Body).reason, 'unsupported_key');
  });

  it('reports document structure failures as invalid_document with details.ledger_error', async () => {
    const did = didOf(8);
    const key = keyOf(8);
    const res = await h.call('POST', '/register-did/prepare', {
      did,
      root_pubkey: multibaseEd25519(key.publicKey),
      did_document: { id: did, verificationMethod: [vmOf(did, 'key-1', key)], authentication: [kid(did, 'nope')] },
    });
    assertError(res, 400, 'invalid_document');
    assert.equal((res.body.details as Body).ledger_error, 'VerificationMethodNotFound');
  });

  it('treats an alias or DID held by a pending registration as taken', async () => {
    const pending = await registerDid(h, 9, { alias: 'in-the-pool', pending: true });
    const did = didOf(10);
    const key = keyOf(10);
    assertError(
      await h.call('POST', '/register-did/prepare', { did, root_pubkey: multibaseEd25519(key.publicKey), did_document: docOf(did, key), alias: 'in-the-pool' }),
      409,
      'alias_taken',
    );
    assertError(
      await h.call('POST', '/register-did/prepare', { did: pending.did, root_pubkey: multibaseEd25519(key.publicKey), did_document: docOf(pending.did, key) }),
      409,
      'did_already_exists',
    );
    h.settle();
  });
});

describe('POST /register-did', () => {
  let h: DirectoryHarness;
  let seed = 20;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  it('answers 202 with the §4.2 shape; the DID is then confirmed and resolvable', async () => {
    const { did, key, document, prepared } = await prepareRegistration(h, seed++, { alias: 'Shape' });
    const res = await h.call('POST', '/register-did', registrationSubmitBody(prepared, key));
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body).sort(), ['did', 'extrinsic', 'message', 'registration_status', 'status', 'tx_hash', 'tx_id']);
    assert.equal(res.body.status, 'accepted');
    assert.equal(res.body.did, did);
    assert.equal(res.body.registration_status, 'pending');
    assert.equal(res.body.extrinsic, 'register_with_proof_v2');
    assert.match(res.body.tx_hash as string, /^0x[0-9a-f]{64}$/);
    assert.equal(res.body.tx_id, res.body.tx_hash);
    h.settle();
    const rec = await resolve(h, did);
    assert.equal(rec.tx_id, res.body.tx_hash);
    assert.deepEqual(rec.aliases, ['shape']);
    assert.equal(rec.root_pubkey, to0x(key.publicKey));
    assert.deepEqual(rec.document, { keyAgreement: [], service: [], ...document });
    assert.equal(rec.version, 1);
  });

  it('accepts a hex signature and a 0x root key', async () => {
    const did = didOf(seed);
    const key = keyOf(seed++);
    const prep = await h.call('POST', '/register-did/prepare', { did, root_pubkey: to0x(key.publicKey), did_document: docOf(did, key) });
    const sig = to0x(key.sign(Buffer.from((prep.body.payload_to_sign as string).slice(2), 'hex')));
    const res = await h.call('POST', '/register-did', { ...(prep.body.request as Body), signature: sig });
    assert.equal(res.status, 202, JSON.stringify(res.body));
  });

  it('refuses legacy and malformed timestamp tokens', async () => {
    const { key, prepared } = await prepareRegistration(h, seed++);
    const body = registrationSubmitBody(prepared, key);
    const expiry = prepared.expiry_ms as string;
    assertError(await h.call('POST', '/register-did', { ...body, timestamp: '2027-01-15T08:05:00.000Z' }), 400, 'legacy_registration_unsupported');
    assertError(await h.call('POST', '/register-did', { ...body, timestamp: '1800000300000' }), 400, 'legacy_registration_unsupported');
    for (const t of [`v2:1:${expiry}`, `v2:0:0${expiry}`, `v2:00:${expiry}`, 'v2:0:', `v2:0:${expiry}:1`, `v2:0:-${expiry}`]) {
      assertError(await h.call('POST', '/register-did', { ...body, timestamp: t }), 400, 'invalid_timestamp_token');
    }
    const { timestamp: _t, ...noTimestamp } = body;
    assertError(await h.call('POST', '/register-did', noTimestamp), 400, 'invalid_timestamp_token');
  });

  it('runs the prepare checks again before the signature', async () => {
    const { key, prepared } = await prepareRegistration(h, seed++);
    const body = registrationSubmitBody(prepared, key);
    assertError(await h.call('POST', '/register-did', { ...body, did: 'did:x:y' }), 400, 'invalid_did');
    assertError(await h.call('POST', '/register-did', { ...body, root_pubkey: 'nope' }), 400, 'invalid_root_pubkey');
    assertError(await h.call('POST', '/register-did', { ...body, did_document: { ...(body.did_document as Body), '@context': [] } }), 400, 'invalid_document');
    assertError(await h.call('POST', '/register-did', { ...body, alias: 'no alias' }), 400, 'invalid_alias');
    // alias_taken and did_already_exists come before the signature encoding
    const existing = await registerDid(h, seed++, { alias: 'existing' });
    assertError(await h.call('POST', '/register-did', { ...body, alias: 'existing', signature: 'bad!' }), 409, 'alias_taken');
    const again = registrationSubmitBody(existing.prepared, existing.key);
    assertError(await h.call('POST', '/register-did', { ...again, signature: 'bad!' }), 409, 'did_already_exists');
    assertError(await h.call('POST', '/register-did', { ...body, signature: 'bad!' }), 400, 'invalid_signature_encoding');
  });

  it('refuses a malformed signature (400) and a wrong one (403)', async () => {
    const { key, prepared } = await prepareRegistration(h, seed++, { alias: 'signed' });
    const body = registrationSubmitBody(prepared, key);
    for (const bad of ['', 'not base64!', toBase64(new Uint8Array(65)), `0x${'ab'.repeat(63)}`, 12]) {
      assertError(await h.call('POST', '/register-did', { ...body, signature: bad }), 400, 'invalid_signature_encoding');
    }
    const other = await h.call('POST', '/register-did', { ...body, signature: signHex(keyOf(99), prepared.payload_to_sign as string) });
    assertError(other, 403, 'invalid_signature');
    assert.equal((other.body.details as Body).ledger_error, 'InvalidSignature');
    // the signature covers the alias and the document: changing either invalidates it
    assertError(await h.call('POST', '/register-did', { ...body, alias: 'other-alias' }), 403, 'invalid_signature');
    const doc = body.did_document as Body;
    assertError(await h.call('POST', '/register-did', { ...body, did_document: { ...doc, authentication: [] } }), 403, 'invalid_signature');
    const { alias: _a, ...noAlias } = body;
    assertError(await h.call('POST', '/register-did', noAlias), 403, 'invalid_signature');
  });

  it('refuses an authorization that expired before submission', async () => {
    const { did, key, prepared } = await prepareRegistration(h, seed++);
    h.clock.advance(300_000);
    const res = await h.call('POST', '/register-did', registrationSubmitBody(prepared, key));
    assertError(res, 400, 'authorization_expired');
    assert.equal((res.body.details as Body).ledger_error, 'RegistrationExpired');
    assert.equal((await h.call('GET', `/registration-status/${did}`)).body.registration_status, 'missing');
  });

  it('refuses a token whose expiry is more than an hour ahead (invalid_expiry)', async () => {
    const { key, prepared } = await prepareRegistration(h, seed++);
    const expiry = BigInt(h.clock.nowMs() + 3_600_001);
    const request = prepared.request as Body;
    const did = request.did as string;
    const bytes = registrationSigningBytes(h.profile, {
      did,
      rootPubkey: key.publicKey,
      alias: null,
      documentHash: documentHash(parseDidDocument(request.did_document, did)),
      expiryMs: expiry,
    });
    const res = await h.call('POST', '/register-did', { ...request, timestamp: `v2:0:${expiry}`, signature: toBase64(key.sign(bytes)) });
    assertError(res, 400, 'invalid_expiry');
    assert.equal((res.body.details as Body).ledger_error, 'RegistrationExpiryTooFar');
  });

  it('answers a resubmission while pending with the same tx_hash and duplicate: true, and after inclusion with did_already_exists', async () => {
    for (const alias of [undefined, 'dup-alias']) {
      const { did, key, prepared } = await prepareRegistration(h, seed++, alias === undefined ? {} : { alias });
      const body = registrationSubmitBody(prepared, key);
      const first = await h.call('POST', '/register-did', body);
      assert.equal(first.status, 202);
      const again = await h.call('POST', '/register-did', body);
      assert.equal(again.status, 202, JSON.stringify(again.body));
      assert.equal(again.body.tx_hash, first.body.tx_hash);
      assert.equal(again.body.duplicate, true);
      assert.equal(h.ledger.pendingEntries().filter((e) => e.tx.meta.subject === did).length, 1);
      h.settle();
      const late = await h.call('POST', '/register-did', body);
      assertError(late, 409, 'did_already_exists');
    }
  });

  it('refuses a second, different registration of a DID while the first is pending', async () => {
    const a = await prepareRegistration(h, seed);
    const b = await prepareRegistration(h, seed++, { key: keyOf(200) });
    assert.equal((await h.call('POST', '/register-did', registrationSubmitBody(a.prepared, a.key))).status, 202);
    assertError(await h.call('POST', '/register-did', registrationSubmitBody(b.prepared, keyOf(200))), 409, 'did_already_exists');
    h.settle();
    assert.equal((await resolve(h, a.did)).root_pubkey, to0x(a.key.publicKey));
  });

  it('registers without the alias when another registration won it in between (soft alias)', async () => {
    const a = await prepareRegistration(h, seed++, { alias: 'raced' });
    const b = await prepareRegistration(h, seed++, { alias: 'raced' });
    assert.equal((await h.call('POST', '/register-did', registrationSubmitBody(a.prepared, a.key))).status, 202);
    h.settle();
    // b's preparation predates a's inclusion; its submission is now refused up front
    assertError(await h.call('POST', '/register-did', registrationSubmitBody(b.prepared, b.key)), 409, 'alias_taken');
    assert.deepEqual((await h.call('GET', '/aliases/raced')).body, { alias: 'raced', did: a.did });
  });
});

describe('registration under profile openpayload', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory({ profile: 'openpayload' });
  });
  after(() => h.close());

  it('signs over openpayload:register:v2| and registers', async () => {
    const r = await registerDid(h, 1, { alias: 'op' });
    assert.ok(r.did.startsWith('did:openpayload:'));
    assert.ok((r.prepared.payload_to_sign as string).startsWith(`0x${toHex(utf8('openpayload:register:v2|'))}`));
    const rec = await resolve(h, r.did);
    assert.deepEqual(rec.aliases, ['op']);
  });

  it('accepts DIDs of any platform segment', async () => {
    const r = await registerDid(h, 2, { did: didOf(2, 'platform') });
    assert.equal((await resolve(h, r.did)).did, didOf(2, 'platform'));
  });

  it('refuses a signature over the platform-profile bytes', async () => {
    const { did, key, prepared } = await prepareRegistration(h, 3);
    const request = prepared.request as Body;
    const platformBytes = registrationSigningBytes(makeProfile('platform'), {
      did,
      rootPubkey: key.publicKey,
      alias: null,
      documentHash: documentHash(parseDidDocument(request.did_document, did)),
      expiryMs: BigInt(prepared.expiry_ms as string),
    });
    assertError(await h.call('POST', '/register-did', { ...request, signature: toBase64(key.sign(platformBytes)) }), 403, 'invalid_signature');
    assert.equal((await h.call('POST', '/register-did', registrationSubmitBody(prepared, key))).status, 202);
  });
});
