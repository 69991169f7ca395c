/**
 * Every DID mutation of http-api.md §5.1 through prepare → sign → submit, and every error of the §2.2 submission
 * pipeline on each submit route (§5.2): success 202, duplicate, effect in resolve after settle.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isoMs } from '../../src/base/clock.js';
import { encodeAliasPayload } from '../../src/protocol/payloads/alias.js';
import { encodeControlPayload } from '../../src/protocol/payloads/control.js';
import { encodeRootKeyPayload } from '../../src/protocol/payloads/root-key.js';
import { multibaseEd25519 } from '../../src/protocol/keys.js';
import { to0x, toBase64 } from '../../src/base/bytes.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import {
  ALL_ACTIONS,
  assertAccepted,
  assertError,
  didOf,
  kaOf,
  keyOf,
  kid,
  localSubmission,
  nonceDomainOf,
  nonceFor,
  prepare,
  prepareSigned,
  registerDid,
  registerFixture,
  resolve,
  signHex,
  submit,
  submitRoute,
  vmOf,
  type ActionName,
  type Fixture,
  type Reply,
} from '../support/directory-flows.js';
import { injectChecked } from '../support/inject-contract.js';

type Body = Record<string, unknown>;

interface ActionCase {
  fields(f: Fixture): Body;
  /** The path id of the submit route, when the route has one (for path_body_mismatch). */
  pathId?: (f: Fixture) => string;
  /** Checks the effect on the finalized record after settle. */
  effect(h: DirectoryHarness, f: Fixture, rec: Body | undefined): Promise<void> | void;
}

const k3 = keyOf(200);
const doc = (rec: Body | undefined) => rec!.document as Record<string, Body[] & string[]>;

const CASES: Record<ActionName, ActionCase> = {
  add_alias: {
    fields: (f) => ({ alias: ` New-${f.alias} ` }),
    effect: (_h, f, rec) => assert.deepEqual(rec!.aliases, [f.alias, `new-${f.alias}`]),
  },
  update_alias: {
    fields: (f) => ({ old_alias: f.alias, new_alias: `renamed-${f.alias}` }),
    pathId: (f) => f.alias,
    effect: async (h, f, rec) => {
      assert.deepEqual(rec!.aliases, [`renamed-${f.alias}`]);
      assertError(await h.call('GET', `/aliases/${f.alias}`), 404, 'alias_not_found');
    },
  },
  remove_alias: {
    fields: (f) => ({ alias: f.alias }),
    pathId: (f) => f.alias,
    effect: async (h, f, rec) => {
      assert.deepEqual(rec!.aliases, []);
      assertError(await h.call('GET', `/aliases/${f.alias}`), 404, 'alias_not_found');
    },
  },
  add_device: {
    fields: () => ({ device_id: 'phone/2#a:b' }),
    effect: (_h, _f, rec) => {
      const devices = rec!.devices as Body[];
      assert.deepEqual(
        devices.map((d) => [d.deviceId, d.tombstoned]),
        [
          ['dev-1', false],
          ['phone/2#a:b', false],
        ],
      );
      assert.equal(typeof devices[1]!.addedAt, 'number');
    },
  },
  update_device: {
    fields: () => ({ device_id: 'dev-1', new_device_id: 'dev/renamed' }),
    pathId: () => 'dev-1',
    effect: (_h, _f, rec) =>
      assert.deepEqual(
        (rec!.devices as Body[]).map((d) => d.deviceId),
        ['dev/renamed'],
      ),
  },
  remove_device: {
    fields: () => ({ device_id: 'dev-1' }),
    pathId: () => 'dev-1',
    effect: (_h, _f, rec) => assert.deepEqual(rec!.devices, []),
  },
  tombstone_device: {
    fields: () => ({ device_id: 'dev-1' }),
    pathId: () => 'dev-1',
    effect: (_h, _f, rec) =>
      assert.deepEqual(
        (rec!.devices as Body[]).map((d) => [d.deviceId, d.tombstoned]),
        [['dev-1', true]],
      ),
  },
  deactivate_did: {
    fields: () => ({}),
    effect: (_h, _f, rec) => assert.equal(rec!.deactivated, true),
  },
  delete_did: {
    fields: () => ({}),
    effect: async (h, f) => {
      assertError(await h.call('GET', `/resolve/${f.did}`), 404, 'did_not_found');
      const st = await h.call('GET', `/registration-status/${f.did}`);
      assert.equal(st.body.registration_status, 'missing');
    },
  },
  UpdateRootPubkey: {
    fields: () => ({ new_root_pubkey: multibaseEd25519(k3.publicKey) }),
    effect: (_h, _f, rec) => assert.equal(rec!.root_pubkey, to0x(k3.publicKey)),
  },
  AddVerificationMethod: {
    fields: (f) => ({ verification_method: vmOf(f.did, 'key-3', k3) }),
    effect: (_h, f, rec) => assert.deepEqual(doc(rec).verificationMethod[2], vmOf(f.did, 'key-3', k3)),
  },
  UpdateVerificationMethod: {
    fields: (f) => ({ verification_method: vmOf(f.did, 'key-2', k3) }),
    pathId: (f) => kid(f.did, 'key-2'),
    effect: (_h, f, rec) => assert.deepEqual(doc(rec).verificationMethod, [vmOf(f.did, 'key-1', f.key), vmOf(f.did, 'key-2', k3)]),
  },
  RemoveVerificationMethod: {
    fields: (f) => ({ id: kid(f.did, 'key-2') }),
    pathId: (f) => kid(f.did, 'key-2'),
    effect: (_h, f, rec) => assert.deepEqual(doc(rec).verificationMethod, [vmOf(f.did, 'key-1', f.key)]),
  },
  AddAuthentication: {
    fields: (f) => ({ id: kid(f.did, 'key-2') }),
    effect: (_h, f, rec) => assert.deepEqual(doc(rec).authentication, [kid(f.did, 'key-1'), kid(f.did, 'key-2')]),
  },
  RemoveAuthentication: {
    fields: (f) => ({ id: kid(f.did, 'key-1') }),
    pathId: (f) => kid(f.did, 'key-1'),
    effect: (_h, f, rec) => {
      assert.deepEqual(doc(rec).authentication, []);
      assert.equal(doc(rec).verificationMethod.length, 2, 'the VM stays');
      assert.equal((doc(rec).verificationMethod[0] as Body).id, kid(f.did, 'key-1'));
    },
  },
  AddKeyAgreement: {
    fields: (f) => ({ key_agreement: kaOf(f.did, 'ka-2', 2) }),
    effect: (_h, f, rec) => assert.deepEqual(doc(rec).keyAgreement, [kaOf(f.did, 'ka-1', 1), kaOf(f.did, 'ka-2', 2)]),
  },
  UpdateKeyAgreement: {
    fields: (f) => ({ key_agreement: kaOf(f.did, 'ka-1', 3) }),
    pathId: (f) => kid(f.did, 'ka-1'),
    effect: (_h, f, rec) => assert.deepEqual(doc(rec).keyAgreement, [kaOf(f.did, 'ka-1', 3)]),
  },
  RemoveKeyAgreement: {
    fields: (f) => ({ id: kid(f.did, 'ka-1') }),
    pathId: (f) => kid(f.did, 'ka-1'),
    effect: (_h, _f, rec) => assert.deepEqual(doc(rec).keyAgreement, []),
  },
  AddService: {
    fields: (f) => ({
      service: { id: kid(f.did, 'svc-2'), type: 'PlatformCacheService', serviceEndpoint: 'https://cache.example/x', authorization: [kid(f.did, 'key-1')] },
    }),
    effect: (_h, f, rec) =>
      assert.deepEqual(doc(rec).service[1], {
        id: kid(f.did, 'svc-2'),
        type: 'PlatformCacheService',
        serviceEndpoint: ['https://cache.example/x'],
        authorization: [kid(f.did, 'key-1')],
      }),
  },
  UpdateService: {
    fields: (f) => ({ service: { id: kid(f.did, 'svc-1'), type: 'PlatformRelayService', serviceEndpoint: ['https://relay.example/2'] } }),
    pathId: (f) => kid(f.did, 'svc-1'),
    effect: (_h, f, rec) =>
      assert.deepEqual(doc(rec).service, [{ id: kid(f.did, 'svc-1'), type: 'PlatformRelayService', serviceEndpoint: ['https://relay.example/2'] }]),
  },
  RemoveService: {
    fields: (f) => ({ id: kid(f.did, 'svc-1') }),
    pathId: (f) => kid(f.did, 'svc-1'),
    effect: (_h, _f, rec) => assert.deepEqual(doc(rec).service, []),
  },
  replace_document: {
    fields: (f) => ({
      document: {
        id: f.did,
        verificationMethod: [vmOf(f.did, 'key-9', k3)],
        service: [{ id: kid(f.did, 'svc-9'), type: 'T', serviceEndpoint: 'https://x.example' }],
      },
    }),
    effect: (_h, f, rec) =>
      assert.deepEqual(rec!.document, {
        id: f.did,
        verificationMethod: [vmOf(f.did, 'key-9', k3)],
        authentication: [],
        keyAgreement: [],
        service: [{ id: kid(f.did, 'svc-9'), type: 'T', serviceEndpoint: ['https://x.example'] }],
      }),
  },
};

/** A payload of another type than the route's (§2.2 step 3): the bytes are valid, just not this route's layout. */
function foreignPayload(action: string, did: string): Uint8Array {
  const tail = { nonce: 0n, validUntil: 1n << 50n, signerKeyId: 'root' };
  switch (nonceDomainOf(action)) {
    case 'alias_nonce':
      return encodeControlPayload({ did, action: { kind: 'AddDevice', deviceId: 'dev-1' }, ...tail });
    case 'control_nonce':
    case 'document_nonce':
      return encodeRootKeyPayload({ did, newRootPubkey: k3.publicKey, ...tail });
    default:
      return encodeAliasPayload({ did, action: 'Add', alias: 'x', oldAlias: null, newAlias: null, ...tail });
  }
}

describe('DID mutations: prepare → sign → submit on every route, with every pipeline error', () => {
  let h: DirectoryHarness;
  let other: string;
  before(async () => {
    h = await startDirectory();
    other = (await registerDid(h, 5)).did;
  });
  after(() => h.close());

  ALL_ACTIONS.forEach((action, i) => {
    it(action, async () => {
      const c = CASES[action];
      const f = await registerFixture(h, 10 + i);
      const fields = c.fields(f);
      const p = await prepareSigned(h, f.did, f.key, action, fields);
      const b = p.body;
      const send = (body: Body, route = p.route): Promise<Reply> => h.call(route.method, route.url, body);
      const nonce = await nonceFor(h, f.did, action);
      const now = BigInt(h.clock.nowMs());

      // prepare response (§5.1)
      assert.equal(p.prepared.action, action);
      assert.equal(p.prepared.nonce_domain, nonceDomainOf(action));
      assert.equal(p.prepared.nonce, nonce.toString());
      assert.equal(p.prepared.signer_key_id, 'root');
      assert.equal(p.prepared.schema_version, '1');
      assert.equal(p.prepared.payload_to_sign, p.prepared.canonical_payload);
      assert.equal(p.request.canonical_payload, p.prepared.canonical_payload);
      assert.equal(p.request.nonce, nonce.toString());
      assert.equal(p.request.valid_until, (now + 300_000n).toString());

      const otherAction = action === 'add_alias' ? 'remove_alias' : 'add_alias';
      assertError(await send({ ...b, action: otherAction }), 400, 'action_mismatch');
      assertError(await send({ ...b, action: undefined }), 400, 'action_mismatch');
      assertError(await send({ ...b, did: other }), 400, 'path_body_mismatch');
      if (c.pathId) {
        const wrongPath = submitRoute(action, f.did, { ...p.request, ...swapIds(p.request, 'zz-other') });
        assert.notEqual(wrongPath.url, p.route.url);
        const res = await send(b, wrongPath);
        assertError(res, 400, 'path_body_mismatch');
      }
      for (const bad of ['abc', '-1', '1.5', '18446744073709551616', '']) {
        assertError(await send({ ...b, nonce: bad }), 400, 'invalid_nonce');
      }
      assertError(await send({ ...b, valid_until: 'tomorrow' }), 400, 'invalid_valid_until');
      assertError(await send({ ...b, signature: 'not base64!' }), 400, 'invalid_signature_encoding');
      assertError(await send({ ...b, signature: toBase64(new Uint8Array(63)) }), 400, 'invalid_signature_encoding');
      const { signature: _s, ...unsigned } = b;
      assertError(await send(unsigned), 400, 'invalid_signature_encoding');
      assertError(await send({ ...b, canonical_payload: '0xdeadbeef' }), 400, 'invalid_canonical_payload');
      assertError(await send({ ...b, canonical_payload: '***' }), 400, 'invalid_canonical_payload');
      assertError(await send({ ...b, canonical_payload: to0x(foreignPayload(action, f.did)) }), 400, 'invalid_canonical_payload');
      // a tampered body field no longer matches the signed payload
      assertError(await send({ ...b, signer_key_id: kid(f.did, 'key-2') }), 403, 'canonical_payload_mismatch');
      if (action === 'replace_document') {
        assertError(await send({ ...b, valid_until: String(now + 300_001n) }), 400, 'invalid_timestamp_token');
        const tampered = { ...(b.document as Body), service: [] };
        assertError(await send({ ...b, document: tampered }), 403, 'canonical_payload_mismatch');
        assertError(await send({ ...b, pubkey: to0x(f.key2.publicKey) }), 403, 'signer_not_authorized');
      } else {
        assertError(await send({ ...b, valid_until: String(now + 300_001n) }), 403, 'canonical_payload_mismatch');
      }
      // a payload signed over another nonce's bytes
      const staleCanonical = localSubmission(h.profile, f.did, f.key, action, fields, { nonce: nonce + 1n, validUntil: now + 300_000n });
      assertError(await send({ ...b, canonical_payload: staleCanonical.body.canonical_payload }), 403, 'canonical_payload_mismatch');

      for (const signer of [kid(f.did, 'missing'), kid(f.did, 'ka-1'), kid(other, 'key-1')]) {
        const signed = localSubmission(h.profile, f.did, f.key, action, fields, { nonce, validUntil: BigInt(b.valid_until as string), signerKeyId: signer });
        const res = await send(signed.body);
        assertError(res, 403, 'signer_not_authorized');
      }
      assertError(await prepare(h, f.did, action, { ...fields, signer_key_id: kid(f.did, 'missing') }), 403, 'signer_not_authorized');

      // a DID that was never registered (fields rebuilt for it: documents and VMs name their DID)
      const ghostDid = didOf(250);
      const ghost = { ...f, did: ghostDid };
      const ghostSub = localSubmission(h.profile, ghostDid, f.key, action, c.fields(ghost), { nonce: 0n, validUntil: now + 300_000n });
      assertError(await send(ghostSub.body, ghostSub.route), 404, 'did_not_found');
      assertError(await prepare(h, ghostDid, action, c.fields(ghost)), 404, 'did_not_found');

      // properly signed, wrong nonce
      const ahead = localSubmission(h.profile, f.did, f.key, action, fields, { nonce: nonce + 1n, validUntil: now + 300_000n });
      const nm = await send(ahead.body);
      assertError(nm, 409, 'nonce_mismatch');
      assert.deepEqual(
        { ...(nm.body.details as Body), ledger_error: undefined },
        { nonce_domain: nonceDomainOf(action), expected: nonce.toString(), received: (nonce + 1n).toString(), ledger_error: undefined },
      );
      assert.match(String((nm.body.details as Body).ledger_error), /^Invalid\w+Nonce$/);
      // properly signed, valid_until == now (expiry is strict)
      const expired = localSubmission(h.profile, f.did, f.key, action, fields, { nonce, validUntil: now });
      const ex = await send(expired.body);
      assertError(ex, 400, 'authorization_expired');
      assert.match(String((ex.body.details as Body).ledger_error), /AuthorizationExpired$/);
      // signature by a key the DID does not hold, and by its VM key under the `root` signer id
      for (const wrong of [keyOf(99), f.key2]) {
        const res = await send({ ...b, signature: signHex(wrong, p.prepared.payload_to_sign as string) });
        assertError(res, 403, 'invalid_signature');
        assert.equal((res.body.details as Body).ledger_error, 'InvalidSignature');
      }

      // nothing of the above changed anything
      assert.equal(await nonceFor(h, f.did, action), nonce);

      // the exact prepared request + signature: 202, then an identical resubmission while pending
      const ok = await send(b);
      const tx = assertAccepted(ok, action);
      assert.equal(ok.body.did, f.did);
      assert.equal(ok.body.nonce_domain, nonceDomainOf(action));
      assert.equal(ok.body.nonce, nonce.toString());
      assert.equal(ok.body.extrinsic, p.prepared.extrinsic);
      assert.equal(ok.body.duplicate, undefined);
      const dup = await send(b);
      assert.equal(assertAccepted(dup, action), tx);
      assert.equal(dup.body.duplicate, true);
      const pendingTx = await h.call('GET', `/transactions/${tx}`);
      assert.equal(pendingTx.body.status, 'pending');
      if (action !== 'delete_did') assert.equal(await nonceFor(h, f.did, action), nonce + 1n, 'the pending change reserves its nonce');

      h.settle();
      const done = await h.call('GET', `/transactions/${tx}`);
      assert.equal(done.body.status, 'finalized', JSON.stringify(done.body));
      assert.equal(done.body.extrinsic, p.prepared.extrinsic);
      const rec = action === 'delete_did' ? undefined : await resolve(h, f.did);
      if (rec) {
        assert.equal(rec.version, 3, 'registration, add_device, this change');
        assert.equal(rec.updatedAt, (await h.call('GET', '/blocks/latest')).body.timestamp);
      }
      await c.effect(h, f, rec);
    });
  });
});

/** The request with every path-bound id replaced by `x` (to build a route whose path differs from the body). */
function swapIds(request: Body, x: string): Body {
  const out: Body = {};
  for (const k of ['old_alias', 'alias', 'device_id', 'id']) if (typeof request[k] === 'string') out[k] = x;
  for (const k of ['verification_method', 'key_agreement', 'service']) {
    if (typeof request[k] === 'object') out[k] = { ...(request[k] as Body), id: x };
  }
  return out;
}

describe('DID mutations: request forms', () => {
  let h: DirectoryHarness;
  /** Profile `openpayload`: also the forms deployed clients send (http-api.md §12). */
  let op: DirectoryHarness;
  before(async () => {
    h = await startDirectory();
    op = await startDirectory({ profile: 'openpayload' });
  });
  after(async () => {
    await h.close();
    await op.close();
  });

  it('platform: a body without canonical_payload is 400 invalid_canonical_payload (the product spec requires it)', async () => {
    const f = await registerFixture(h, 46);
    const p = await prepareSigned(h, f.did, f.key, 'add_alias', { alias: 'required' });
    const { canonical_payload: _c, ...body } = p.body;
    const res = await submit(h, p, body);
    assertError(res, 400, 'invalid_canonical_payload');
    assert.equal((res.body.details as Body).field, 'canonical_payload');
    assertAccepted(await submit(h, p), 'add_alias');
    h.settle();
  });

  it('platform: an ISO-8601 valid_until is 400 invalid_valid_until at prepare and submit (u64 milliseconds only)', async () => {
    const f = await registerFixture(h, 47);
    const vu = h.clock.nowMs() + 600_000;
    assertError(await prepare(h, f.did, 'add_alias', { alias: 'iso', valid_until: isoMs(vu) }), 400, 'invalid_valid_until');
    const p = await prepareSigned(h, f.did, f.key, 'add_alias', { alias: 'iso', valid_until: String(vu) });
    assertError(await submit(h, p, { ...p.body, valid_until: isoMs(vu) }), 400, 'invalid_valid_until');
    assertAccepted(await submit(h, p, { ...p.body, valid_until: vu }), 'add_alias');
  });

  it('openpayload: accepts a body without canonical_payload (the Directory rebuilds it) on every payload family', async () => {
    const h = op;
    const f = await registerFixture(h, 40);
    const cases: [string, Body][] = [
      ['add_alias', { alias: 'rebuilt' }],
      ['add_device', { device_id: 'dev-2' }],
      ['UpdateRootPubkey', { new_root_pubkey: to0x(f.key.publicKey) }],
      ['AddService', { service: { id: kid(f.did, 'svc-2'), type: 'T', serviceEndpoint: 'https://e.example' } }],
      ['replace_document', { document: { id: f.did, verificationMethod: [vmOf(f.did, 'key-1', f.key)] } }],
    ];
    for (const [action, fields] of cases) {
      const p = await prepareSigned(h, f.did, f.key, action, fields);
      const { canonical_payload: _c, ...body } = p.body;
      assertAccepted(await submit(h, p, body), action);
      h.settle();
    }
    const rec = await resolve(h, f.did);
    assert.deepEqual(rec.aliases, [f.alias, 'rebuilt']);
    assert.deepEqual(
      (rec.devices as Body[]).map((d) => d.deviceId),
      ['dev-1', 'dev-2'],
    );
    assert.deepEqual((rec.document as Body).verificationMethod, [vmOf(f.did, 'key-1', f.key)]);
    assert.equal(rec.version, 2 + cases.length);
  });

  it('openpayload: accepts a hex signature, a JSON-integer nonce and an ISO-8601 valid_until', async () => {
    const h = op;
    const f = await registerFixture(h, 41);
    const vu = h.clock.nowMs() + 600_000;
    const prep = await prepare(h, f.did, 'add_alias', { alias: 'iso', valid_until: isoMs(vu) });
    assert.equal(prep.status, 200, JSON.stringify(prep.body));
    assert.equal(prep.body.valid_until, String(vu), 'responses echo decimal ms');
    const req = prep.body.request as Body;
    assert.equal(req.valid_until, String(vu));
    const sig = f.key.sign(Buffer.from((prep.body.payload_to_sign as string).slice(2), 'hex'));
    const res = await h.call('POST', `/dids/${encodeURIComponent(f.did)}/aliases`, {
      ...req,
      nonce: 0,
      valid_until: isoMs(vu),
      signature: to0x(sig),
    });
    assertAccepted(res, 'add_alias');
  });

  it('compares aliases in path and body after normalisation, and fills service.id from the path', async () => {
    const f = await registerFixture(h, 42);
    const p = await prepareSigned(h, f.did, f.key, 'remove_alias', { alias: f.alias });
    const upper = `/dids/${encodeURIComponent(f.did)}/aliases/${f.alias.toUpperCase()}`;
    assertAccepted(await h.call('DELETE', upper, p.body), 'remove_alias');
    h.settle();

    const svc = { type: 'PlatformRelayService', serviceEndpoint: ['https://relay.example/3'] };
    const prep = await prepare(h, f.did, 'UpdateService', { service: { id: kid(f.did, 'svc-1'), ...svc } });
    assert.equal(prep.status, 200, JSON.stringify(prep.body));
    // the body may omit service.id: the route supplies it
    const req = prep.body.request as Body;
    const body = { ...req, service: svc, signature: signHex(f.key, prep.body.payload_to_sign as string) };
    const url = `/dids/${encodeURIComponent(f.did)}/document/services/${encodeURIComponent(kid(f.did, 'svc-1'))}`;
    assertAccepted(await h.call('PUT', url, body), 'UpdateService');
    h.settle();
    assert.deepEqual(((await resolve(h, f.did)).document as Body).service, [{ id: kid(f.did, 'svc-1'), ...svc }]);
  });

  it('routes percent-encoded DIDs and ids (%3A, %23, %2F) and keeps ids byte for byte', async () => {
    const f = await registerFixture(h, 43);
    const odd = 'tablet/7#x:y';
    await (async () => {
      const p = await prepareSigned(h, f.did, f.key, 'add_device', { device_id: odd });
      assertAccepted(await submit(h, p), 'add_device');
      h.settle();
    })();
    const p = await prepareSigned(h, f.did, f.key, 'tombstone_device', { device_id: odd });
    assert.ok(p.route.url.includes('tablet%2F7%23x%3Ay'), p.route.url);
    assert.ok(p.route.url.includes('did%3Aplatform%3A'), p.route.url);
    assertAccepted(await submit(h, p), 'tombstone_device');
    h.settle();
    const devices = (await resolve(h, f.did)).devices as Body[];
    assert.deepEqual(
      devices.map((d) => [d.deviceId, d.tombstoned]),
      [
        ['dev-1', false],
        [odd, true],
      ],
    );

    // a raw `/` instead of %2F splits the path: no such route
    const raw = `/dids/${encodeURIComponent(f.did)}/devices/tablet/7/tombstone`;
    assertError(await h.call('POST', raw, p.body), 404, 'not_found');
    assertError(await h.call('POST', `/dids/${encodeURIComponent(f.did)}/devices/%E0%A4%A/tombstone`, p.body), 400, 'invalid_path');
  });

  it('refuses a 17th pending change of one (DID, nonce domain) with 429 too_many_pending and Retry-After', async () => {
    const f = await registerFixture(h, 45);
    for (let i = 0; i < 16; i++) {
      const action = i % 2 === 0 ? 'remove_device' : 'add_device';
      const p = await prepareSigned(h, f.did, f.key, action, { device_id: 'dev-1' });
      assertAccepted(await submit(h, p), action);
    }
    const p = await prepareSigned(h, f.did, f.key, 'remove_device', { device_id: 'dev-1' });
    assert.equal(p.prepared.nonce, '17');
    const res = await injectChecked(h.server, {
      method: 'DELETE',
      url: p.route.url,
      payload: JSON.stringify(p.body),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.statusCode, 429);
    const body = res.json() as Body;
    assert.equal(body.code, 'too_many_pending');
    assert.equal((body.details as Body).ledger_error, 'PoolFull');
    assert.match(String(res.headers['retry-after']), /^[1-9][0-9]*$/);
    // other nonce domains of the same DID are not affected
    const alias = await prepareSigned(h, f.did, f.key, 'add_alias', { alias: 'other-domain' });
    assertAccepted(await submit(h, alias));
    h.settle();
    // removed and re-added eight times: the last of the 16 changes re-added it
    assert.deepEqual(
      ((await resolve(h, f.did)).devices as Body[]).map((d) => d.deviceId),
      ['dev-1'],
    );
    assert.equal(await nonceFor(h, f.did, 'add_device'), 17n);
    assertAccepted(await submit(h, await prepareSigned(h, f.did, f.key, 'add_device', { device_id: 'after' })));
  });

  it('a second change can be prepared while the first is pending and both are included in order', async () => {
    const f = await registerFixture(h, 44);
    const a = await prepareSigned(h, f.did, f.key, 'add_alias', { alias: 'first' });
    assertAccepted(await submit(h, a));
    const b = await prepareSigned(h, f.did, f.key, 'add_alias', { alias: 'second' });
    assert.equal(b.prepared.nonce, '1');
    assertAccepted(await submit(h, b));
    h.settle();
    assert.deepEqual((await resolve(h, f.did)).aliases, [f.alias, 'first', 'second']);
  });
});
