/**
 * Persona, policy and application SDK (http-api.md §7–§9): each write is checked against the caller's intent with
 * the shared codecs before it is signed, signed with the caller's key and sent to the route of its action.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseBase64, to0x } from '../../src/base/bytes.js';
import { ApplicationClient } from '../../src/client/application-client.js';
import { PayloadCheckError } from '../../src/client/errors.js';
import { PersonaClient } from '../../src/client/persona-client.js';
import { PolicyClient } from '../../src/client/policy-client.js';
import { keyPairFromSeed, verifyEd25519 } from '../../src/crypto/ed25519.js';
import { encodeApplicationAuthorization } from '../../src/protocol/payloads/application.js';
import { encodePersonaPayload, encodePersonaTransferAcceptancePayload } from '../../src/protocol/payloads/persona.js';
import { encodePolicyV2Payload } from '../../src/protocol/payloads/policy-v2.js';
import { encodePolicyV3Payload } from '../../src/protocol/payloads/policy-v3.js';
import { completePolicy, parsePolicyJsonV3 } from '../../src/protocol/policy/json-parse.js';
import { policyIdV3 } from '../../src/protocol/policy/policy-id.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { BASE, fakeFetch, type RecordedRequest } from './fake-fetch.js';

const DID = 'did:platform:8DfbjXLth7APvt3qQPgtf';
const OTHER = 'did:platform:9DfbjXLth7APvt3qQPgtf';
const key = keyPairFromSeed(new Uint8Array(32).fill(7));
const linkedKey = keyPairFromSeed(new Uint8Array(32).fill(8));
const signer = { key, keyId: 'root' };
const accepted = { status: 202, body: { status: 'accepted', tx_hash: `0x${'ab'.repeat(32)}`, tx_id: `0x${'ab'.repeat(32)}`, extrinsic: 'x' } };

/** A prepare answer for `bytes`, with the request the Directory would return. */
const prepared = (bytes: Uint8Array, request: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  status: 200,
  body: { ...extra, payload_to_sign: to0x(bytes), canonical_payload: to0x(bytes), request: { ...request, canonical_payload: to0x(bytes) } },
});

function signatureOk(req: RecordedRequest, bytes: Uint8Array, field = 'signature', k = key): boolean {
  return verifyEd25519(k.publicKey, bytes, parseBase64((req.body as Record<string, string>)[field]!)!);
}

const POLICY = {
  scope: { type: 'DID', id: DID },
  operator_did: DID,
  policy_ttl_seconds: 60,
  ruleset: [{ id: 'r', priority: 1, conditions: [], action: { type: 'BaseDidDelivery/v1' } }],
};

function v3Bytes(policyJson: typeof POLICY, signerKeyId = 'root'): Uint8Array {
  const policy = completePolicy(parsePolicyJsonV3(policyJson), { policyId: policyIdV3(PLATFORM, { kind: 'Did', id: DID }), revision: 1n });
  return encodePolicyV3Payload({ operatorDid: DID, operation: { kind: 'SetPolicy', policy }, nonce: 4n, validUntil: 1_800_000_000_000n, signerKeyId });
}

describe('PolicyClient', () => {
  it('sets a v3 policy: the prepared policy is the one given, signed and PUT to its scope', async () => {
    const bytes = v3Bytes(POLICY);
    const { fetch, calls } = fakeFetch((req) => (req.method === 'POST' ? prepared(bytes, { action: 'set_policy_v3', nonce: '4' }) : accepted));
    await new PolicyClient(BASE, PLATFORM, fetch).writeV3({ type: 'did', id: DID }, { policy: POLICY, signer });
    assert.deepEqual(
      calls.map((c) => `${c.method} ${c.path}`),
      [`POST /policies/v3/did/${encodeURIComponent(DID)}/prepare`, `PUT /policies/v3/did/${encodeURIComponent(DID)}`],
    );
    assert.ok(signatureOk(calls[1]!, bytes));
    assert.equal((calls[1]!.body as Record<string, unknown>).nonce, '4');
  });

  it('refuses to sign a policy that differs from the one given, or another signer', async () => {
    const changed = { ...POLICY, ruleset: [{ ...POLICY.ruleset[0]!, priority: 2 }] };
    for (const bytes of [v3Bytes(changed), v3Bytes(POLICY, `${DID}#other`)]) {
      const { fetch, calls } = fakeFetch(() => prepared(bytes, {}));
      await assert.rejects(new PolicyClient(BASE, PLATFORM, fetch).writeV3({ type: 'did', id: DID }, { policy: POLICY, signer }), PayloadCheckError);
      assert.equal(calls.length, 1, 'nothing submitted');
    }
  });

  it('v2 constraint writes go to the constraints route of the scope', async () => {
    const constraints = { requested_cache_seconds: 60, max_http_envelope_bytes: 10, max_unchunked_message_bytes: 10, max_chunk_bytes: 10, max_replicas: 1 };
    const bytes = encodePolicyV2Payload({
      operatorDid: DID,
      nonce: 0n,
      validUntil: 1n,
      signerKeyId: 'root',
      operation: {
        kind: 'SetDidConstraints',
        did: DID,
        constraints: {
          requestedCacheSeconds: 60,
          maxHttpEnvelopeBytes: 10,
          maxUnchunkedMessageBytes: 10,
          maxChunkBytes: 10,
          maxMessageBytes: 4_294_967_295,
          maxChunks: 65_535,
          maxReplicas: 1,
        },
      },
    });
    const { fetch, calls } = fakeFetch((req) => (req.method === 'POST' ? prepared(bytes, { action: 'set_did_constraints' }) : accepted));
    await new PolicyClient(BASE, PLATFORM, fetch).writeV2('set_did_constraints', DID, { constraints, signer });
    assert.deepEqual(
      calls.map((c) => `${c.method} ${c.path}`),
      ['POST /delivery-policies/prepare', `PUT /delivery-policies/dids/${encodeURIComponent(DID)}/constraints`],
    );
    assert.deepEqual((calls[0]!.body as Record<string, unknown>).delivery_constraints, constraints);
    assert.ok(signatureOk(calls[1]!, bytes));
  });
});

describe('PersonaClient', () => {
  const named = (operatorDid: string) =>
    encodePersonaPayload({
      operatorDid,
      nonce: 2n,
      validUntil: 1n,
      signerKeyId: 'root',
      operation: { kind: 'RegisterNamed', persona: 'acme', controllerKeyIds: ['root'], controllerThreshold: 1, constraints: null },
    });

  it('registers a named persona after checking the payload', async () => {
    const bytes = named(DID);
    const { fetch, calls } = fakeFetch((req) => (req.method === 'POST' ? prepared(bytes, { action: 'register_named_persona' }) : accepted));
    await new PersonaClient(BASE, PLATFORM, fetch).registerNamed('Acme', { operatorDid: DID, signer, controllerKeys: ['root'] });
    assert.deepEqual(
      calls.map((c) => `${c.method} ${c.path}`),
      ['POST /personas/Acme/named/prepare', 'PUT /personas/Acme/named'],
    );
    assert.ok(signatureOk(calls[1]!, bytes));
  });

  it('refuses a payload for another operator, and a revocation prepared as something else', async () => {
    const { fetch, calls } = fakeFetch(() => prepared(named(OTHER), {}));
    await assert.rejects(
      new PersonaClient(BASE, PLATFORM, fetch).registerNamed('acme', { operatorDid: DID, signer, controllerKeys: ['root'] }),
      /operator_did/,
    );
    await assert.rejects(new PersonaClient(BASE, PLATFORM, fetch).revoke('acme', { operatorDid: OTHER, signer }), /operation RegisterNamed, expected Revoke/);
    assert.ok(
      calls.every((c) => c.method === 'POST'),
      'nothing submitted',
    );
  });
});

describe('PersonaClient DNS flows', () => {
  const attestation = {
    dnsProofHash: new Uint8Array(32).fill(1),
    challengeNonce: 0n,
    verificationExpiresAt: 9n,
    attestor: new Uint8Array(32).fill(2),
    attestationSignature: new Uint8Array(65),
  };

  it('registers a DNS persona: current operator nonce, verify, check, sign, PUT', async () => {
    const bytes = encodePersonaPayload({
      operatorDid: DID,
      nonce: 5n,
      validUntil: 1n,
      signerKeyId: 'root',
      operation: { kind: 'Register', persona: 'example.com', controllerKeyIds: ['root'], controllerThreshold: 1, constraints: null, attestation },
    });
    const { fetch, calls } = fakeFetch((req) => {
      if (req.path.endsWith('/dns-challenges/c-1')) return { status: 200, body: { challenge_id: 'c-1', operator_nonce: '4' } };
      if (req.path.startsWith('/persona-operators/')) return { status: 200, body: { operator_did: DID, operator_nonce: '5' } };
      if (req.path.endsWith('/verify')) return prepared(bytes, { action: 'register_persona' });
      return accepted;
    });
    await new PersonaClient(BASE, PLATFORM, fetch).registerDns('Example.com', {
      challengeId: 'c-1',
      operatorDid: DID,
      signer,
      controllerKeys: ['root'],
      verificationDays: 30,
    });
    assert.deepEqual(
      calls.map((c) => `${c.method} ${c.path}`),
      [
        'GET /personas/Example.com/dns-challenges/c-1',
        `GET /persona-operators/${encodeURIComponent(DID)}/nonce`,
        'POST /personas/Example.com/dns-challenges/c-1/verify',
        'PUT /personas/Example.com',
      ],
    );
    assert.deepEqual(calls[2]!.body, {
      operator_did: DID,
      action: 'register_persona',
      challenge_id: 'c-1',
      nonce: '5',
      signer_key_id: 'root',
      controller_keys: ['root'],
      controller_threshold: 1,
      verification_days: 30,
    });
    assert.ok(signatureOk(calls[3]!, bytes));
  });

  it('transfer: the new operator signs the checked acceptance payload only', async () => {
    const acceptance = encodePersonaTransferAcceptancePayload({
      domain: PLATFORM.personaTransferDomain,
      genesisHash: new Uint8Array(32),
      persona: 'example.com',
      currentOperatorDid: OTHER,
      newOperatorDid: DID,
      newControllerKeyIds: ['root'],
      newControllerThreshold: 1,
      constraints: null,
      dnsProofHash: new Uint8Array(32),
      challengeNonce: 0n,
      verificationExpiresAt: 9n,
      newOperatorSignerKeyId: 'root',
    });
    const answer = (req: RecordedRequest) => {
      if (req.path.endsWith('/dns-challenges/c-2')) return { status: 200, body: { challenge_id: 'c-2', current_operator_did: OTHER } };
      if (req.path.startsWith('/persona-operators/')) return { status: 200, body: { operator_did: OTHER, operator_nonce: '7' } };
      return { status: 200, body: { acceptance_payload: to0x(acceptance), request: {} } };
    };
    const { fetch, calls } = fakeFetch(answer);
    const out = await new PersonaClient(BASE, PLATFORM, fetch).acceptTransfer('example.com', { challengeId: 'c-2', newOperatorDid: DID, signer });
    assert.equal(calls[1]!.path, `/persona-operators/${encodeURIComponent(OTHER)}/nonce`, 'the nonce of the current operator, who signs the transfer');
    assert.equal((calls[2]!.body as Record<string, unknown>).nonce, '7');
    assert.ok(verifyEd25519(key.publicKey, acceptance, parseBase64(out.new_operator_signature)!));
    const other = fakeFetch(answer);
    await assert.rejects(
      new PersonaClient(BASE, PLATFORM, other.fetch).acceptTransfer('example.com', { challengeId: 'c-2', newOperatorDid: OTHER, signer }),
      /new_operator_did/,
    );
  });
});

describe('ApplicationClient', () => {
  it('registers an application (integer nonce, 0x-hex payload) and refuses another id', async () => {
    const bytes = encodeApplicationAuthorization(PLATFORM, { action: 'register', applicationId: 'my.app', controlDid: DID, status: 'Active', nonce: 3n });
    const { fetch, calls } = fakeFetch((req) =>
      req.method === 'POST' ? prepared(bytes, { control_did: DID, signer_key_id: 'root', nonce: 3 }, { nonce: 3 }) : accepted,
    );
    await new ApplicationClient(BASE, PLATFORM, fetch).register('my.app', { controlDid: DID, signer });
    assert.deepEqual(
      calls.map((c) => `${c.method} ${c.path}`),
      ['POST /applications/my.app/registration/prepare', 'PUT /applications/my.app/registration'],
    );
    assert.ok(signatureOk(calls[1]!, bytes));
    assert.equal((calls[1]!.body as Record<string, unknown>).nonce, 3);
    await assert.rejects(new ApplicationClient(BASE, PLATFORM, fetch).register('other.app', { controlDid: DID, signer }), PayloadCheckError);
  });

  it('link_did is signed by both DIDs over the same bytes', async () => {
    const bytes = encodeApplicationAuthorization(PLATFORM, {
      action: 'linked_did',
      applicationId: 'my.app',
      controlDid: DID,
      linkedDid: OTHER,
      enabled: true,
      nonce: 0n,
    });
    const { fetch, calls } = fakeFetch((req) => (req.method === 'POST' ? prepared(bytes, { action: 'link_did' }, { nonce: 0 }) : accepted));
    await new ApplicationClient(BASE, PLATFORM, fetch).authorize(
      'my.app',
      { action: 'link_did', linkedDid: OTHER, linkedSigner: { key: linkedKey, keyId: 'root' } },
      signer,
    );
    const put = calls[1]!;
    assert.ok(signatureOk(put, bytes, 'control_signature'));
    assert.ok(signatureOk(put, bytes, 'linked_signature', linkedKey));
    const unlink = fakeFetch(() => prepared(bytes, {}, { nonce: 0 }));
    await assert.rejects(
      new ApplicationClient(BASE, PLATFORM, unlink.fetch).authorize(
        'my.app',
        { action: 'unlink_did', linkedDid: OTHER, linkedSigner: { key: linkedKey, keyId: 'root' } },
        signer,
      ),
      /enabled/,
    );
  });
});
