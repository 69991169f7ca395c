/**
 * Directory read routes (http-api.md §3): resolve, registration-status, nonces, transactions, blocks, aliases.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isoMs } from '../../src/base/clock.js';
import { to0x } from '../../src/base/bytes.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import {
  assertAccepted,
  assertError,
  didOf,
  docOf,
  keyOf,
  kid,
  mutate,
  nonces,
  prepare,
  prepareRegistration,
  prepareSigned,
  registerDid,
  registrationSubmitBody,
  resolve,
  submit,
} from '../support/directory-flows.js';

type Body = Record<string, unknown>;

const RECORD_KEYS = [
  'aliases',
  'block_hash',
  'block_number',
  'deactivated',
  'devices',
  'did',
  'document',
  'document_nonce',
  'freshness',
  'owner',
  'pending_document_action',
  'pending_operations',
  'registration_status',
  'root_pubkey',
  'tx_id',
  'updatedAt',
  'version',
];
const PENDING_KEYS = ['pending_document_action_name', 'pending_document_nonce', 'pending_document_submitted_at', 'pending_extrinsic_hash'];
const NONCE_KEYS = [
  'alias_nonce',
  'application_nonce',
  'control_nonce',
  'did',
  'document_nonce',
  'operator_nonce',
  'policy_nonce',
  'policy_v3_nonce',
  'root_pubkey_nonce',
];

describe('GET /resolve/{did}', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  it('renders every field of a fresh record; arrays are [] and never null', async () => {
    const r = await registerDid(h, 1);
    const rec = await resolve(h, r.did);
    assert.deepEqual(Object.keys(rec).sort(), RECORD_KEYS);
    const latest = (await h.call('GET', '/blocks/latest')).body;
    assert.deepEqual(rec, {
      did: r.did,
      owner: null,
      aliases: [],
      devices: [],
      version: 1,
      document: {
        id: r.did,
        verificationMethod: r.document.verificationMethod as Body[],
        authentication: [kid(r.did, 'key-1')],
        keyAgreement: [],
        service: [],
      },
      updatedAt: latest.timestamp,
      freshness: 'finalized',
      registration_status: 'confirmed',
      root_pubkey: to0x(r.key.publicKey),
      deactivated: false,
      tx_id: r.submitted.tx_hash,
      document_nonce: '0',
      pending_document_action: false,
      pending_operations: [],
      block_number: latest.number,
      block_hash: latest.hash,
    });
  });

  it('shows pending_* markers while document changes are pending, describing the latest; absent after', async () => {
    const r = await registerDid(h, 2);
    const svc = { id: kid(r.did, 'svc'), type: 'PlatformCacheService', serviceEndpoint: 'https://cache.example' };
    const first = await mutate(h, r.did, r.key, 'AddService', { service: svc }, { pending: true });
    h.clock.advance(10);
    // prepare sees the pool state: a refused preparation reserves nothing
    assertError(await prepare(h, r.did, 'AddService', { service: svc }), 409, 'service_already_exists');
    const third = await mutate(h, r.did, r.key, 'RemoveService', { id: svc.id }, { pending: true });
    const alias = await mutate(h, r.did, r.key, 'add_alias', { alias: 'pending-alias' }, { pending: true });

    const rec = await resolve(h, r.did);
    assert.deepEqual(Object.keys(rec).sort(), [...RECORD_KEYS, ...PENDING_KEYS].sort());
    assert.equal(rec.pending_document_action, true);
    assert.equal(rec.pending_document_nonce, '1');
    assert.equal(rec.pending_document_action_name, 'RemoveService');
    assert.equal(rec.pending_extrinsic_hash, third.submitted.tx_hash);
    assert.equal(rec.pending_document_submitted_at, isoMs(h.clock.nowMs()));
    assert.equal(rec.document_nonce, '0', 'finalized value');
    assert.deepEqual((rec.document as Body).service, [], 'finalized document');
    assert.deepEqual(rec.aliases, []);
    assert.deepEqual(rec.pending_operations, [
      { action: 'AddService', nonce_domain: 'document_nonce', nonce: '0', tx_hash: first.submitted.tx_hash, submitted_at: isoMs(h.clock.nowMs() - 10) },
      { action: 'RemoveService', nonce_domain: 'document_nonce', nonce: '1', tx_hash: third.submitted.tx_hash, submitted_at: isoMs(h.clock.nowMs()) },
      { action: 'add_alias', nonce_domain: 'alias_nonce', nonce: '0', tx_hash: alias.submitted.tx_hash, submitted_at: isoMs(h.clock.nowMs()) },
    ]);

    h.settle();
    const after = await resolve(h, r.did);
    assert.deepEqual(Object.keys(after).sort(), RECORD_KEYS);
    assert.equal(after.pending_document_action, false);
    assert.deepEqual(after.pending_operations, []);
    assert.equal(after.document_nonce, '2');
    assert.deepEqual(after.aliases, ['pending-alias']);
    assert.equal(after.version, 4);
  });

  it('a pending change of another nonce domain is listed but sets no document marker', async () => {
    const r = await registerDid(h, 3);
    const m = await mutate(h, r.did, r.key, 'add_device', { device_id: 'd' }, { pending: true });
    const rec = await resolve(h, r.did);
    assert.equal(rec.pending_document_action, false);
    assert.equal('pending_document_nonce' in rec, false);
    assert.deepEqual(
      (rec.pending_operations as Body[]).map((o) => [o.action, o.nonce_domain, o.tx_hash]),
      [['add_device', 'control_nonce', m.submitted.tx_hash]],
    );
    h.settle();
  });

  it('answers 404 did_not_found, 425 registration_pending with details.tx_hash, and 400 invalid_did', async () => {
    assertError(await h.call('GET', `/resolve/${didOf(90)}`), 404, 'did_not_found');
    const p = await registerDid(h, 91, { pending: true });
    const pending = await h.call('GET', `/resolve/${encodeURIComponent(p.did)}`);
    assertError(pending, 425, 'registration_pending');
    assert.equal((pending.body.details as Body).tx_hash, p.submitted.tx_hash);
    h.settle();
    assert.equal((await resolve(h, p.did)).registration_status, 'confirmed');
    for (const bad of [
      'not-a-did',
      'did:Platform:8C2kCzsB2fJy9MiZos1mS',
      'did:platform:abc',
      `did:platform:${'1'.repeat(97)}`,
      'did:platform:0OIl0OIl0OIl0OIl0OIl',
    ]) {
      assertError(await h.call('GET', `/resolve/${encodeURIComponent(bad)}`), 400, 'invalid_did');
    }
  });
});

describe('GET /registration-status/{did}', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  it('is pending, then confirmed; missing for an unknown DID (always 200)', async () => {
    const did = didOf(1);
    assert.deepEqual((await h.call('GET', `/registration-status/${did}`)).body, { did, registration_status: 'missing', version: 0, deactivated: false });
    const r = await registerDid(h, 1, { pending: true });
    const tx = r.submitted.tx_hash;
    const pending = await h.call('GET', `/registration-status/${did}`);
    assert.equal(pending.status, 200);
    assert.deepEqual(pending.body, { did, registration_status: 'pending', version: 0, deactivated: false, tx_id: tx, tx_hash: tx });
    h.settle();
    const confirmed = await h.call('GET', `/registration-status/${did}`);
    assert.deepEqual(confirmed.body, { did, registration_status: 'confirmed', version: 1, deactivated: false, tx_id: tx, tx_hash: tx });
    await mutate(h, did, r.key, 'add_alias', { alias: 'bump' });
    assert.equal((await h.call('GET', `/registration-status/${did}`)).body.version, 2);
    assertError(await h.call('GET', '/registration-status/did:nope'), 400, 'invalid_did');
  });

  it('reports last_error after a registration failed in its block, for an hour', async () => {
    const { did, key, prepared } = await prepareRegistration(h, 2, { expiryMs: String(h.clock.nowMs() + 1000) });
    const sub = await h.call('POST', '/register-did', registrationSubmitBody(prepared, key));
    assert.equal(sub.status, 202);
    h.clock.advance(1000); // the block's timestamp reaches expiry_ms: expired
    h.settle();
    const tx = sub.body.tx_hash as string;
    const st = await h.call('GET', `/registration-status/${did}`);
    assert.equal(st.status, 200);
    assert.deepEqual(st.body, {
      did,
      registration_status: 'missing',
      version: 0,
      deactivated: false,
      last_error: { code: 'authorization_expired', message: st.body.last_error && (st.body.last_error as Body).message },
      tx_id: tx,
      tx_hash: tx,
    });
    assert.equal(typeof (st.body.last_error as Body).message, 'string');
    assertError(await h.call('GET', `/resolve/${did}`), 404, 'did_not_found');
    assertError(await h.call('GET', `/dids/${did}/nonces`), 404, 'did_not_found');

    const txv = await h.call('GET', `/transactions/${tx}`);
    assert.equal(txv.body.status, 'failed');
    assert.deepEqual(txv.body.error, { code: 'authorization_expired', message: (txv.body.error as Body).message, ledger_error: 'RegistrationExpired' });
    assert.equal(typeof txv.body.block_number, 'number');
    const block = await h.call('GET', `/blocks/${txv.body.block_number}`);
    assert.deepEqual(block.body.extrinsics, [
      { tx_hash: tx, extrinsic: 'register_with_proof_v2', success: false, action: 'register_did', subject: did, subject_kind: 'did', error: txv.body.error },
    ]);

    h.clock.advance(3_600_001);
    const later = await h.call('GET', `/registration-status/${did}`);
    assert.equal(later.body.registration_status, 'missing');
    assert.equal('last_error' in later.body, false, 'only failures of the last hour are reported');

    // the DID can still be registered
    await registerDid(h, 2);
    assert.equal((await h.call('GET', `/registration-status/${did}`)).body.registration_status, 'confirmed');
  });
});

describe('GET /dids/{did}/nonces', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  it('answers every domain as a decimal string, from the pool state', async () => {
    const r = await registerDid(h, 1);
    const n0 = await nonces(h, r.did);
    assert.deepEqual(Object.keys(n0).sort(), NONCE_KEYS);
    for (const k of NONCE_KEYS) if (k !== 'did') assert.equal(n0[k], '0', k);
    assert.equal(n0.did, r.did);

    await mutate(h, r.did, r.key, 'add_alias', { alias: 'a1' }, { pending: true });
    await mutate(h, r.did, r.key, 'add_alias', { alias: 'a2' }, { pending: true });
    await mutate(h, r.did, r.key, 'add_device', { device_id: 'd' }, { pending: true });
    await mutate(
      h,
      r.did,
      r.key,
      'AddKeyAgreement',
      { key_agreement: { id: kid(r.did, 'ka'), type: 'X25519KeyAgreementKey2020', controller: r.did, publicKeyMultibase: 'zKey' } },
      { pending: true },
    );
    await mutate(h, r.did, r.key, 'UpdateRootPubkey', { new_root_pubkey: to0x(r.key.publicKey) }, { pending: true });
    const pending = await nonces(h, r.did);
    assert.deepEqual(
      [pending.alias_nonce, pending.control_nonce, pending.document_nonce, pending.root_pubkey_nonce, pending.policy_nonce],
      ['2', '1', '1', '1', '0'],
    );
    assert.equal((await resolve(h, r.did)).document_nonce, '0', 'resolve keeps the finalized value');
    h.settle();
    assert.deepEqual(await nonces(h, r.did), pending);
  });

  it('answers for a pending registration, 404 for an unknown DID, 400 for a malformed one', async () => {
    const p = await registerDid(h, 2, { pending: true });
    assert.equal((await nonces(h, p.did)).alias_nonce, '0');
    assertError(await h.call('GET', `/dids/${didOf(99)}/nonces`), 404, 'did_not_found');
    assertError(await h.call('GET', '/dids/did:x/nonces'), 400, 'invalid_did');
    h.settle();
  });
});

describe('GET /transactions/{tx_hash}', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  it('follows a change from pending to finalized', async () => {
    const r = await registerDid(h, 1);
    const m = await mutate(h, r.did, r.key, 'add_alias', { alias: 'tx' }, { pending: true });
    const tx = m.submitted.tx_hash as string;
    const submittedAt = isoMs(h.clock.nowMs());
    const pending = await h.call('GET', `/transactions/${tx}`);
    assert.deepEqual(pending.body, { tx_hash: tx, status: 'pending', extrinsic: 'add_alias', submitted_at: submittedAt });
    h.settle();
    const done = await h.call('GET', `/transactions/${tx.toUpperCase().replace('0X', '0x')}`);
    assert.equal(done.status, 200);
    const latest = (await h.call('GET', '/blocks/latest')).body;
    assert.deepEqual(done.body, {
      tx_hash: tx,
      status: 'finalized',
      extrinsic: 'add_alias',
      submitted_at: submittedAt,
      block_number: latest.number,
      block_hash: latest.hash,
    });
  });

  it('reports a change that failed in its block with {code, message, ledger_error}', async () => {
    const r = await registerDid(h, 2);
    // two changes signed against nonce 0 are impossible through prepare; a short validity is not
    const p = await prepareSigned(h, r.did, r.key, 'add_device', { device_id: 'late', valid_until: String(h.clock.nowMs() + 5) });
    const tx = (await submit(h, p)).body.tx_hash as string;
    h.clock.advance(5);
    h.settle();
    const failed = await h.call('GET', `/transactions/${tx}`);
    assert.equal(failed.body.status, 'failed');
    assert.deepEqual(failed.body.error, {
      code: 'authorization_expired',
      message: (failed.body.error as Body).message,
      ledger_error: 'ControlAuthorizationExpired',
    });
    assert.equal(typeof (failed.body.error as Body).message, 'string');
    assert.equal(failed.body.block_number, (await h.call('GET', '/blocks/latest')).body.number);
    // a failed change consumes no nonce and changes nothing
    assert.equal((await nonces(h, r.did)).control_nonce, '0');
    assert.deepEqual((await resolve(h, r.did)).devices, []);
  });

  it('answers 404 transaction_not_found and 400 for a malformed hash', async () => {
    assertError(await h.call('GET', `/transactions/0x${'ab'.repeat(32)}`), 404, 'transaction_not_found');
    for (const bad of ['abc', `0x${'ab'.repeat(31)}`, `${'ab'.repeat(32)}`, `0x${'zz'.repeat(32)}`]) {
      assertError(await h.call('GET', `/transactions/${bad}`), 400, 'invalid_request');
    }
  });
});

describe('GET /blocks/latest and /blocks/{number}', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  it('serves the genesis block, then each produced block with its extrinsics', async () => {
    const genesis = await h.call('GET', '/blocks/latest');
    assert.equal(genesis.status, 200);
    assert.equal(genesis.body.number, 0);
    assert.equal(genesis.body.parent_hash, `0x${'00'.repeat(32)}`);
    assert.deepEqual(genesis.body.extrinsics, []);
    assert.equal(genesis.body.finalized, true);
    assert.deepEqual((await h.call('GET', '/blocks/0')).body, genesis.body);

    const r = await registerDid(h, 1);
    const b1 = await h.call('GET', '/blocks/latest');
    assert.deepEqual(Object.keys(b1.body).sort(), [
      'extrinsics',
      'extrinsics_root',
      'finalized',
      'finalized_number',
      'hash',
      'number',
      'parent_hash',
      'results_root',
      'timestamp',
      'timestamp_iso',
    ]);
    assert.equal(b1.body.number, 1);
    assert.equal(b1.body.parent_hash, genesis.body.hash);
    assert.match(b1.body.hash as string, /^0x[0-9a-f]{64}$/);
    assert.match(b1.body.extrinsics_root as string, /^0x[0-9a-f]{64}$/);
    assert.match(b1.body.results_root as string, /^0x[0-9a-f]{64}$/);
    assert.equal(b1.body.timestamp_iso, isoMs(b1.body.timestamp as number));
    assert.equal(b1.body.finalized, true);
    assert.equal(b1.body.finalized_number, 1);
    assert.deepEqual(b1.body.extrinsics, [
      { tx_hash: r.submitted.tx_hash, extrinsic: 'register_with_proof_v2', success: true, action: 'register_did', subject: r.did, subject_kind: 'did' },
    ]);
    assert.deepEqual((await h.call('GET', '/blocks/1')).body, b1.body);
    const g = await h.call('GET', '/blocks/0');
    assert.equal(g.body.finalized_number, 1);
  });

  it('answers 404 block_not_found and 400 for a non-integer number', async () => {
    assertError(await h.call('GET', '/blocks/99'), 404, 'block_not_found');
    for (const bad of ['abc', '-1', '1.5', '01', '4294967296', '1e3']) {
      assertError(await h.call('GET', `/blocks/${bad}`), 400, 'invalid_request');
    }
  });
});

describe('GET /aliases/{alias}', () => {
  let h: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
  });
  after(() => h.close());

  it('finds finalized aliases by their normalised form', async () => {
    const r = await registerDid(h, 1, { alias: 'Sales' });
    assert.deepEqual((await h.call('GET', '/aliases/sales')).body, { alias: 'sales', did: r.did });
    const upper = await h.call('GET', '/aliases/SALES');
    assert.equal(upper.status, 200);
    assert.deepEqual(upper.body, { alias: 'sales', did: r.did });
    assert.deepEqual((await h.call('GET', '/aliases/%20Sales%09')).body, { alias: 'sales', did: r.did });

    await mutate(h, r.did, r.key, 'add_alias', { alias: 'later' }, { pending: true });
    assertError(await h.call('GET', '/aliases/later'), 404, 'alias_not_found');
    h.settle();
    assert.deepEqual((await h.call('GET', '/aliases/later')).body, { alias: 'later', did: r.did });
  });

  it('answers 404 alias_not_found and 400 invalid_alias', async () => {
    assertError(await h.call('GET', '/aliases/nobody'), 404, 'alias_not_found');
    for (const bad of ['a%20b', 'a%40b', '%C3%BC', '%20', 'x'.repeat(65)]) {
      assertError(await h.call('GET', `/aliases/${bad}`), 400, 'invalid_alias');
    }
  });
});

describe('resolve of a DID with a non-default document', () => {
  it('renders services with serviceEndpoint arrays and authorization/priority only when present', async () => {
    const h = await startDirectory();
    after(() => h.close());
    const did = didOf(5);
    const key = keyOf(5);
    const document = {
      ...docOf(did, key),
      service: [
        { id: kid(did, 'a'), type: 'PlatformRelayService', serviceEndpoint: 'https://a.example' },
        { id: kid(did, 'b'), type: 'PlatformCacheService', serviceEndpoint: ['https://b1.example', 'https://b2.example'], authorization: [], priority: 0 },
      ],
    };
    await registerDid(h, 5, { document });
    const rec = await resolve(h, did);
    assert.deepEqual((rec.document as Body).service, [
      { id: kid(did, 'a'), type: 'PlatformRelayService', serviceEndpoint: ['https://a.example'] },
      { id: kid(did, 'b'), type: 'PlatformCacheService', serviceEndpoint: ['https://b1.example', 'https://b2.example'], authorization: [], priority: 0 },
    ]);
    const p = await prepareSigned(h, did, key, 'add_alias', { alias: 'x' });
    assertAccepted(await submit(h, p));
  });
});
