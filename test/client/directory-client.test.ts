/**
 * DirectoryClient against a fake Directory: prepare → check → sign → submit, registration, local style,
 * refusal of tampered preparations, and polling.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBase64, parseHex, to0x, toBase64, toHex } from '../../src/base/bytes.js';
import { verifyEd25519 } from '../../src/crypto/ed25519.js';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { PayloadCheckError, RegistrationFailedError, TransactionFailedError, WaitTimeoutError } from '../../src/client/errors.js';
import { DirectoryApiError } from '../../src/client/http.js';
import { didDocumentFor, keyPairFromSeed } from '../../src/client/keys.js';
import { buildMutationRequest } from '../../src/client/payloads.js';
import { DID_ACTIONS, isDidAction } from '../../src/client/actions.js';
import type { PreparedMutation } from '../../src/client/verify-prepared.js';
import type { DidDocumentJson, RegistrationPrepareResponse } from '../../src/client/types.js';
import { documentHash } from '../../src/protocol/document.js';
import { parseDidDocument } from '../../src/protocol/document-json.js';
import { parseRootPubkey } from '../../src/protocol/keys.js';
import { registrationSigningBytes, registrationToken } from '../../src/protocol/payloads/registration.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { hex, vectors as V } from '../vectors/ledger-vectors.js';
import { BASE, fakeFetch, fakeTiming, type FakeAnswer, type RecordedRequest } from './fake-fetch.js';

const KEY7 = keyPairFromSeed(hex(V.keys.seed7.seed_hex));
const KEY9 = keyPairFromSeed(hex(V.keys.seed9.seed_hex));
const DID = V.V1.did;
const E = encodeURIComponent(DID);
const ACCEPTED = {
  status: 'accepted',
  tx_hash: `0x${'ab'.repeat(32)}`,
  tx_id: `0x${'ab'.repeat(32)}`,
  extrinsic: 'x',
  message: 'accepted for processing; not final',
};
const NONCES = {
  did: DID,
  alias_nonce: '0',
  document_nonce: '7',
  root_pubkey_nonce: '2',
  control_nonce: '5',
  policy_nonce: '0',
  policy_v3_nonce: '0',
  operator_nonce: '0',
  application_nonce: '0',
};

type Tamper = (p: PreparedMutation) => void;

/** An honest Directory prepare (built with the shared codec), optionally tampered with before it is returned. */
function directory(tamper?: Tamper): ReturnType<typeof fakeFetch> {
  return fakeFetch((req: RecordedRequest): FakeAnswer => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (req.method === 'POST' && req.path === `/dids/${E}/prepare`) {
      const { did, action, signer_key_id, valid_until, ...fields } = body;
      assert.ok(isDidAction(action));
      const spec = DID_ACTIONS[action];
      const signerKeyId = typeof signer_key_id === 'string' ? signer_key_id : 'root';
      const b = buildMutationRequest(PLATFORM, did as string, action, fields as never, {
        nonce: NONCES[spec.nonceDomain],
        validUntil: typeof valid_until === 'string' ? valid_until : V.V1.valid_until,
        signerKeyId,
        pubkey: KEY7.publicKey,
      });
      const prepared: PreparedMutation = {
        did: did as string,
        action,
        extrinsic: spec.extrinsic,
        nonce_domain: spec.nonceDomain,
        nonce: b.request.nonce,
        valid_until: b.request.valid_until,
        signer_key_id: signerKeyId,
        payload_to_sign: to0x(b.payload),
        canonical_payload: to0x(b.payload),
        schema_version: '1',
        previous_version: 3,
        request: b.request,
      };
      tamper?.(prepared);
      return { status: 200, body: prepared };
    }
    if (req.method === 'GET' && req.path === `/dids/${E}/nonces`) return { status: 200, body: NONCES };
    return { status: 202, body: ACCEPTED };
  });
}

function client(f: ReturnType<typeof fakeFetch>, timing = fakeTiming()): DirectoryClient {
  return new DirectoryClient(`${BASE}/`, { fetch: f.fetch, timing });
}

function assertSignedBy(body: Record<string, unknown>, key: Uint8Array): void {
  const sig = parseBase64(body.signature as string);
  const payload = parseHex(body.canonical_payload as string);
  assert.ok(sig && payload && sig.length === 64);
  assert.ok(verifyEd25519(key, payload, sig), 'signature verifies over the canonical payload');
}

test('addAlias: prepare, check, sign, submit {...request, signature} to POST /dids/{did}/aliases', async () => {
  const f = directory();
  const r = await client(f).addAlias(DID, KEY7, 'root', { alias: ' SalesGroup ' });
  assert.equal(r.status, 'accepted');
  assert.equal(f.calls.length, 2);
  assert.deepEqual(f.calls[0], {
    method: 'POST',
    path: `/dids/${E}/prepare`,
    headers: f.calls[0]!.headers,
    body: { did: DID, action: 'add_alias', alias: ' SalesGroup ', signer_key_id: 'root' },
  });
  const sub = f.calls[1]!;
  assert.equal(sub.method, 'POST');
  assert.equal(sub.path, `/dids/${E}/aliases`);
  const body = sub.body as Record<string, unknown>;
  assert.equal(body.alias, 'salesgroup');
  assert.equal(body.canonical_payload, `0x${V.V1.payload_hex}`);
  assert.equal(body.signature, V.V1.signature_b64, 'Base64 signature of the V1 vector');
});

test('every convenience method reaches its own submit route with a valid signature', async () => {
  const vm = { id: `${DID}#k2`, type: 'Ed25519VerificationKey2020', controller: DID, publicKeyMultibase: V.keys.seed7.multibase_ed01 };
  const svc = { id: `${DID}#relay`, type: 'PlatformRelayService', serviceEndpoint: 'https://relay.example' };
  const f = directory();
  const c = client(f);
  const runs: [() => Promise<unknown>, string, string][] = [
    [() => c.updateAlias(DID, KEY7, 'root', { old_alias: 'A', new_alias: 'b' }), 'PATCH', `/dids/${E}/aliases/a`],
    [() => c.removeAlias(DID, KEY7, 'root', { alias: 'a' }), 'DELETE', `/dids/${E}/aliases/a`],
    [() => c.addDevice(DID, KEY7, 'root', { device_id: 'phone/1' }), 'POST', `/dids/${E}/devices`],
    [() => c.updateDevice(DID, KEY7, 'root', { device_id: 'phone/1', new_device_id: 'p2' }), 'PATCH', `/dids/${E}/devices/phone%2F1`],
    [() => c.removeDevice(DID, KEY7, 'root', { device_id: 'p2' }), 'DELETE', `/dids/${E}/devices/p2`],
    [() => c.tombstoneDevice(DID, KEY7, 'root', { device_id: 'p2' }), 'POST', `/dids/${E}/devices/p2/tombstone`],
    [() => c.deactivate(DID, KEY7, 'root'), 'POST', `/dids/${E}/deactivate`],
    [() => c.deleteDid(DID, KEY7, 'root'), 'DELETE', `/dids/${E}`],
    [() => c.rotateRootKey(DID, KEY7, 'root', KEY9.publicKey), 'PUT', `/dids/${E}/root-pubkey`],
    [() => c.addVerificationMethod(DID, KEY7, 'root', { verification_method: vm }), 'POST', `/dids/${E}/document/verification-methods`],
    [() => c.updateVerificationMethod(DID, KEY7, 'root', { verification_method: vm }), 'PUT', `/dids/${E}/document/verification-methods/${E}%23k2`],
    [() => c.removeVerificationMethod(DID, KEY7, 'root', { id: vm.id }), 'DELETE', `/dids/${E}/document/verification-methods/${E}%23k2`],
    [() => c.addAuthentication(DID, KEY7, 'root', { id: vm.id }), 'POST', `/dids/${E}/document/authentication`],
    [() => c.removeAuthentication(DID, KEY7, 'root', { id: vm.id }), 'DELETE', `/dids/${E}/document/authentication/${E}%23k2`],
    [() => c.addKeyAgreement(DID, KEY7, 'root', { key_agreement: vm }), 'POST', `/dids/${E}/document/key-agreements`],
    [() => c.updateKeyAgreement(DID, KEY7, 'root', { key_agreement: vm }), 'PUT', `/dids/${E}/document/key-agreements/${E}%23k2`],
    [() => c.removeKeyAgreement(DID, KEY7, 'root', { id: vm.id }), 'DELETE', `/dids/${E}/document/key-agreements/${E}%23k2`],
    [() => c.addService(DID, KEY7, 'root', { service: svc }), 'POST', `/dids/${E}/document/services`],
    [() => c.updateService(DID, KEY7, 'root', { service: svc }), 'PUT', `/dids/${E}/document/services/${E}%23relay`],
    [() => c.removeService(DID, KEY7, 'root', { id: svc.id }), 'DELETE', `/dids/${E}/document/services/${E}%23relay`],
    [() => c.replaceDocument(DID, KEY7, 'root', { document: didDocumentFor(DID, KEY7.publicKey) }), 'PUT', `/dids/${E}/document/proof`],
  ];
  for (const [run, method, path] of runs) {
    f.calls.length = 0;
    await run();
    const sub = f.calls[1]!;
    assert.deepEqual([sub.method, sub.path], [method, path]);
    assertSignedBy(sub.body as Record<string, unknown>, KEY7.publicKey);
  }
  f.calls.length = 0;
  await c.rotateRootKey(DID, KEY7, `${DID}#k2`, KEY9.publicKey);
  assert.deepEqual(f.calls[0]!.body, { did: DID, action: 'UpdateRootPubkey', new_root_pubkey: to0x(KEY9.publicKey), signer_key_id: `${DID}#k2` });
});

test('the payload check refuses a tampered payload_to_sign and sends nothing', async () => {
  const cases: [string, Tamper][] = [
    [
      'flipped byte',
      (p) => {
        const b = parseHex(p.payload_to_sign)!;
        b[b.length - 1] ^= 1;
        p.payload_to_sign = to0x(b);
        p.canonical_payload = p.payload_to_sign;
        p.request.canonical_payload = p.payload_to_sign;
      },
    ],
    [
      'canonical_payload differs',
      (p) => {
        p.canonical_payload = `${p.canonical_payload.slice(0, -2)}00`;
      },
    ],
    [
      'request.canonical_payload differs',
      (p) => {
        p.request.canonical_payload = '0x00';
      },
    ],
    [
      'not hex',
      (p) => {
        p.payload_to_sign = 'zz';
      },
    ],
    [
      'request nonce differs from the signed nonce',
      (p) => {
        p.request.nonce = '1';
        p.nonce = '1';
      },
    ],
    [
      'top-level valid_until differs',
      (p) => {
        p.valid_until = '1';
      },
    ],
    [
      'action swapped',
      (p) => {
        p.action = 'remove_alias';
        p.request.action = 'remove_alias';
      },
    ],
    [
      'consistent but for another alias',
      (p) => {
        const evil = buildMutationRequest(PLATFORM, DID, 'add_alias', { alias: 'evil' }, { nonce: 0, validUntil: p.valid_until, signerKeyId: 'root' });
        p.request = evil.request;
        p.payload_to_sign = to0x(evil.payload);
        p.canonical_payload = p.payload_to_sign;
      },
    ],
  ];
  for (const [name, tamper] of cases) {
    const f = directory(tamper);
    await assert.rejects(client(f).addAlias(DID, KEY7, 'root', { alias: 'salesgroup' }), PayloadCheckError, name);
    assert.equal(f.calls.length, 1, `${name}: only the prepare request was sent`);
  }
});

test('other refusals: signer, valid_until, replace_document timestamp and pubkey', async () => {
  const other = directory((p) => {
    const b = buildMutationRequest(PLATFORM, DID, 'add_device', { device_id: 'd' }, { nonce: p.nonce, validUntil: p.valid_until, signerKeyId: 'root' });
    Object.assign(p, { signer_key_id: 'root', request: b.request, payload_to_sign: to0x(b.payload), canonical_payload: to0x(b.payload) });
  });
  await assert.rejects(client(other).addDevice(DID, KEY7, `${DID}#k2`, { device_id: 'd' }), PayloadCheckError);
  const f = directory();
  await assert.rejects(
    client(
      directory((p) => {
        p.request.timestamp = 'v2:0:1';
      }),
    ).replaceDocument(DID, KEY7, 'root', { document: { id: DID } }),
    PayloadCheckError,
  );
  await assert.rejects(client(f).replaceDocument(DID, KEY9, 'root', { document: { id: DID } }), /pubkey is not the signing key/);
  const asked = '1800000000000';
  const vu = directory((p) => {
    const b = buildMutationRequest(PLATFORM, DID, 'deactivate_did', {}, { nonce: p.nonce, validUntil: '1900000000000', signerKeyId: 'root' });
    Object.assign(p, { valid_until: b.request.valid_until, request: b.request, payload_to_sign: to0x(b.payload), canonical_payload: to0x(b.payload) });
  });
  await assert.rejects(client(vu).mutate(DID, KEY7, 'root', 'deactivate_did', {}, { validUntil: asked }), /valid_until differs/);
  const ok = directory();
  await client(ok).mutate(DID, KEY7, 'root', 'deactivate_did', {}, { validUntil: asked });
  assert.equal((ok.calls[0]!.body as Record<string, unknown>).valid_until, asked, 'valid_until sent as a decimal string');
});

test('submitLocal reads the action nonce domain, builds locally and sends the signed body', async () => {
  const f = directory();
  await client(f).submitLocal(DID, KEY7, 'add_device', { device_id: 'phone-1' }, { validUntil: V.V1.valid_until });
  assert.deepEqual(
    f.calls.map((c) => [c.method, c.path]),
    [
      ['GET', `/dids/${E}/nonces`],
      ['POST', `/dids/${E}/devices`],
    ],
  );
  const body = f.calls[1]!.body as Record<string, unknown>;
  assert.equal(body.nonce, NONCES.control_nonce);
  assert.equal(body.action, 'add_device');
  assert.equal(body.signer_key_id, 'root');
  assertSignedBy(body, KEY7.publicKey);

  const g = directory();
  const timing = fakeTiming(1_700_000_000_000);
  await client(g, timing).submitLocal(V.V5.did, KEY7, 'replace_document', { document: V.V5.document_json as unknown as DidDocumentJson }, { nonce: 7 });
  assert.deepEqual(
    g.calls.map((c) => [c.method, c.path]),
    [['PUT', `/dids/${encodeURIComponent(V.V5.did)}/document/proof`]],
    'no nonce lookup when the nonce is given',
  );
  const rb = g.calls[0]!.body as Record<string, unknown>;
  assert.equal(rb.valid_until, '1700000300000', 'default validity 300 s');
  assert.equal(rb.timestamp, 'v2:7:1700000300000');
  assert.equal(rb.pubkey, to0x(KEY7.publicKey));
  assert.equal(rb.signature, toBase64(hex(V.V6.signature_hex)));
});

/** A registration prepare built from the shared codec, as http-api.md §4.1 specifies. */
function registrationDirectory(tamper?: (p: RegistrationPrepareResponse) => void): ReturnType<typeof fakeFetch> {
  return fakeFetch((req) => {
    const body = req.body as Record<string, unknown>;
    if (req.path === '/register-did/prepare') {
      const expiry = BigInt((body.expiry_ms as string | undefined) ?? V.V5.expiry_ms);
      const alias = typeof body.alias === 'string' ? body.alias.trim().toLowerCase() : null;
      const hash = documentHash(parseDidDocument(body.did_document, body.did as string));
      const bytes = registrationSigningBytes(PLATFORM, {
        did: body.did as string,
        rootPubkey: parseRootPubkey(body.root_pubkey as string)!,
        alias,
        documentHash: hash,
        expiryMs: expiry,
      });
      const p: RegistrationPrepareResponse = {
        request: {
          did: body.did as string,
          root_pubkey: body.root_pubkey as string,
          did_document: body.did_document as DidDocumentJson,
          timestamp: registrationToken(expiry),
          ...(alias ? { alias } : {}),
        },
        payload_to_sign: to0x(bytes),
        canonical_payload: to0x(bytes),
        document_hash: to0x(hash),
        expiry_ms: expiry.toString(),
        extrinsic: 'register_with_proof_v2',
      };
      tamper?.(p);
      return { status: 200, body: p };
    }
    return {
      status: 202,
      body: {
        status: 'accepted',
        did: body.did,
        registration_status: 'pending',
        extrinsic: 'register_with_proof_v2',
        tx_hash: ACCEPTED.tx_hash,
        tx_id: ACCEPTED.tx_id,
        message: 'm',
      },
    };
  });
}

test('register: V5 vector end to end (z-base58 raw root key, Base64 signature, request echoed)', async () => {
  const f = registrationDirectory();
  const doc = V.V5.document_json as unknown as DidDocumentJson;
  const r = await client(f).register({ did: V.V5.did, key: KEY7, didDocument: doc, alias: V.V5.alias_raw, expiryMs: V.V5.expiry_ms });
  assert.equal(r.registration_status, 'pending');
  assert.deepEqual(f.calls[0]!.body, {
    did: V.V5.did,
    root_pubkey: V.keys.seed7.multibase_raw,
    did_document: doc,
    alias: V.V5.alias_raw,
    expiry_ms: V.V5.expiry_ms,
  });
  assert.equal(f.calls[1]!.path, '/register-did');
  assert.deepEqual(f.calls[1]!.body, {
    did: V.V5.did,
    root_pubkey: V.keys.seed7.multibase_raw,
    did_document: doc,
    timestamp: V.V5.token,
    alias: V.V5.alias,
    signature: V.V5.signature_b64,
  });
});

test('register refuses a preparation it did not ask for', async () => {
  const doc = V.V5.document_json as unknown as DidDocumentJson;
  const args = { did: V.V5.did, key: KEY7, didDocument: doc, alias: 'SalesGroup', expiryMs: V.V5.expiry_ms };
  const tampers: [string, (p: RegistrationPrepareResponse) => void][] = [
    [
      'flipped payload byte',
      (p) => {
        const b = parseHex(p.payload_to_sign)!;
        b[30] ^= 1;
        p.payload_to_sign = to0x(b);
        p.canonical_payload = p.payload_to_sign;
      },
    ],
    [
      'alias dropped',
      (p) => {
        delete p.request.alias;
        const b = registrationSigningBytes(PLATFORM, {
          did: V.V5.did,
          rootPubkey: KEY7.publicKey,
          alias: null,
          documentHash: hex(V.V5.document_hash_hex),
          expiryMs: BigInt(V.V5.expiry_ms),
        });
        p.payload_to_sign = to0x(b);
        p.canonical_payload = p.payload_to_sign;
      },
    ],
    [
      'other root key',
      (p) => {
        p.request.root_pubkey = to0x(KEY9.publicKey);
      },
    ],
    [
      'other document',
      (p) => {
        p.request.did_document = { id: V.V5.did };
      },
    ],
    [
      'extra request key',
      (p) => {
        (p.request as unknown as Record<string, unknown>).nonce = '0';
      },
    ],
    [
      'token with a nonce',
      (p) => {
        p.request.timestamp = `v2:1:${V.V5.expiry_ms}`;
      },
    ],
    [
      'longer expiry',
      (p) => {
        p.request.timestamp = 'v2:0:1700000400000';
        p.expiry_ms = '1700000400000';
      },
    ],
  ];
  for (const [name, tamper] of tampers) {
    const f = registrationDirectory(tamper);
    await assert.rejects(client(f).register(args), PayloadCheckError, name);
    assert.equal(f.calls.length, 1, name);
  }
});

test('reads use the documented paths with percent-encoded segments', async () => {
  const f = fakeFetch(() => ({ status: 200, body: {} }));
  const c = client(f);
  await c.resolve(DID);
  await c.registrationStatus(DID);
  await c.nonces(DID);
  await c.transaction(ACCEPTED.tx_hash);
  await c.latestBlock();
  await c.block(7);
  await c.aliasLookup('Sales@Group');
  await c.health();
  assert.deepEqual(
    f.calls.map((x) => `${x.method} ${x.path}`),
    [
      `GET /resolve/${E}`,
      `GET /registration-status/${E}`,
      `GET /dids/${E}/nonces`,
      `GET /transactions/${ACCEPTED.tx_hash}`,
      'GET /blocks/latest',
      'GET /blocks/7',
      'GET /aliases/Sales%40Group',
      'GET /health',
    ],
  );
});

function sequence(answers: FakeAnswer[]): ReturnType<typeof fakeFetch> {
  let i = 0;
  return fakeFetch(() => answers[Math.min(i++, answers.length - 1)]!);
}

const tx = (status: string, extra: Record<string, unknown> = {}) => ({
  status: 200,
  body: { tx_hash: ACCEPTED.tx_hash, status, extrinsic: 'add_alias', submitted_at: 'x', ...extra },
});

test('waitForTransaction tolerates 425/429/5xx, honours Retry-After, ends at finalized', async () => {
  const timing = fakeTiming();
  const f = sequence([
    { status: 503, body: { code: 'ledger_unavailable' }, headers: { 'retry-after': '2' } },
    { status: 425, body: { code: 'x' } },
    { status: 502, text: 'gateway' },
    tx('pending'),
    tx('in_block'),
    tx('finalized', { block_number: 3 }),
  ]);
  const r = await client(f, timing).waitForTransaction(ACCEPTED.tx_hash, { intervalMs: 100 });
  assert.equal(r.status, 'finalized');
  assert.deepEqual(timing.slept, [2000, 100, 100, 100, 100]);
});

test('waitForTransaction: failed → TransactionFailedError with the code; 404 is not retried; deadline', async () => {
  const failed = sequence([tx('pending'), tx('failed', { error: { code: 'nonce_mismatch', message: 'm', ledger_error: 'InvalidAliasNonce' } })]);
  const e = await client(failed)
    .waitForTransaction(ACCEPTED.tx_hash)
    .catch((x: unknown) => x);
  assert.ok(e instanceof TransactionFailedError);
  assert.equal(e.code, 'nonce_mismatch');
  assert.equal(e.ledgerError, 'InvalidAliasNonce');
  const missing = sequence([{ status: 404, body: { code: 'transaction_not_found' } }]);
  await assert.rejects(
    client(missing).waitForTransaction(ACCEPTED.tx_hash),
    (x: unknown) => x instanceof DirectoryApiError && x.code === 'transaction_not_found',
  );
  assert.equal(missing.calls.length, 1);
  const slow = sequence([tx('pending')]);
  const timing = fakeTiming();
  await assert.rejects(client(slow, timing).waitForTransaction(ACCEPTED.tx_hash, { timeoutMs: 1000, intervalMs: 300 }), WaitTimeoutError);
  assert.deepEqual(timing.slept, [300, 300, 300, 100]);
});

test('waitForRegistration polls until confirmed; a missing status with last_error fails', async () => {
  const st = (s: string, extra: Record<string, unknown> = {}) => ({
    status: 200,
    body: { did: DID, registration_status: s, version: 0, deactivated: false, ...extra },
  });
  const ok = sequence([{ status: 429, body: { code: 'rate_limited' } }, st('pending'), st('confirmed', { version: 1 })]);
  assert.equal((await client(ok).waitForRegistration(DID)).version, 1);
  const bad = sequence([st('pending'), st('missing', { last_error: { code: 'authorization_expired', message: 'late' } })]);
  await assert.rejects(client(bad).waitForRegistration(DID), (x: unknown) => x instanceof RegistrationFailedError && x.code === 'authorization_expired');
});

test('didDocumentFor builds a #root Ed25519VerificationKey2020 method listed in authentication', () => {
  const doc = didDocumentFor(V.V5.did, KEY7.publicKey);
  assert.deepEqual(doc, {
    id: V.V5.did,
    verificationMethod: [{ id: `${V.V5.did}#root`, type: 'Ed25519VerificationKey2020', controller: V.V5.did, publicKeyMultibase: V.keys.seed7.multibase_ed01 }],
    authentication: [`${V.V5.did}#root`],
  });
  assert.equal(toHex(parseRootPubkey(doc.verificationMethod![0]!.publicKeyMultibase)!), V.keys.seed7.public_key_hex);
});
