/**
 * The SDK's `did-resolver` driver with real ecosystem packages against a live Directory over loopback HTTP:
 * `did-jwt` verifies an EdDSA JWT signed with a ddn DID's root key, refuses one signed by a key the DID no longer
 * lists after a root-key rotation, and verifies the old one against the DID as it was (`?versionTime=`).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { createJWT, EdDSASigner, verifyJWT, type JWTVerifyOptions } from 'did-jwt';
import { Resolver } from 'did-resolver';
import { getResolver } from '../../src/client/index.js';
import { multibaseEd25519 } from '../../src/protocol/keys.js';
import { checkContract, stopChecking } from '../support/contract-check.js';
import { startDirectory, type DirectoryHarness } from '../support/directory-harness.js';
import { didOf, keyOf, mutate, registerDid } from '../support/directory-flows.js';

/** The 32-byte seed of `keyOf(seed)`: what did-jwt's EdDSA signer takes. */
const seedOf = (seed: number): Uint8Array => new Uint8Array(32).fill(seed);

describe('did-resolver driver (getResolver) with did-jwt', () => {
  let h: DirectoryHarness;
  let resolver: Resolver;
  let directoryUrl: string;
  before(async () => {
    h = await startDirectory();
    await h.server.fastify.listen({ port: 0, host: '127.0.0.1' });
    directoryUrl = `http://127.0.0.1:${(h.server.fastify.server.address() as AddressInfo).port}`;
    resolver = new Resolver(getResolver({ directoryUrl }));
    // every answer the driver reads, against the W3C route's OpenAPI entry
    await checkContract([directoryUrl]);
  });
  after(async () => {
    await h.close();
    stopChecking([directoryUrl]);
  });

  it('resolves through did-resolver, with W3C errors as its keywords', async () => {
    const r = await registerDid(h, 71);
    const res = await resolver.resolve(r.did);
    assert.equal(res.didDocument?.id, r.did);
    assert.equal(res.didDocumentMetadata.versionId, '1');
    assert.equal((await resolver.resolve(didOf(72))).didResolutionMetadata.error, 'notFound');
    assert.equal((await resolver.resolve('did:platform:0OIl')).didResolutionMetadata.error, 'invalidDid');
    assert.equal((await resolver.resolve(`${r.did}?versionId=7`)).didResolutionMetadata.error, 'notFound');
    // a method the driver was not given is did-resolver's own refusal
    assert.equal((await resolver.resolve('did:web:example.com')).didResolutionMetadata.error, 'unsupportedDidMethod');
    const unreachable = new Resolver(getResolver({ directoryUrl: 'http://127.0.0.1:1' }));
    assert.equal((await unreachable.resolve(r.did)).didResolutionMetadata.error, 'internalError');
  });

  it('did-jwt verifies a JWT of the root key, refuses it after a rotation, and verifies it against versionTime', async () => {
    const did = didOf(73);
    // a document without the root key: after the rotation the old key is listed nowhere
    await registerDid(h, 73, { did, document: { id: did } });
    const jwt = await createJWT({ sub: 'alice', claim: 1 }, { issuer: did, signer: EdDSASigner(seedOf(73)) }, { alg: 'EdDSA' });
    const ok = await verifyJWT(jwt, { resolver });
    assert.equal(ok.issuer, did);
    assert.equal(ok.signer.id, `${did}#root`);
    assert.equal(ok.payload.claim, 1);

    const before = (await resolver.resolve(did)).didDocumentMetadata.updated!;
    h.clock.advance(5000);
    await mutate(h, did, keyOf(73), 'UpdateRootPubkey', { new_root_pubkey: multibaseEd25519(keyOf(74).publicKey) });
    await assert.rejects(verifyJWT(jwt, { resolver }), /invalid_signature/);
    const forged = await createJWT({ sub: 'alice' }, { issuer: did, signer: EdDSASigner(seedOf(75)) }, { alg: 'EdDSA' });
    await assert.rejects(verifyJWT(forged, { resolver }), /invalid_signature/);
    const fresh = await createJWT({ sub: 'alice' }, { issuer: did, signer: EdDSASigner(seedOf(74)) }, { alg: 'EdDSA' });
    assert.equal((await verifyJWT(fresh, { resolver })).issuer, did);

    // the JWT made before the rotation, checked against the DID as it was then: did-jwt checks against the keys of
    // a resolution it is handed (its `iss` stays the DID: a DID URL there would name one verification method)
    const asThen = async (): Promise<JWTVerifyOptions['didAuthenticator']> => {
      const result = await resolver.resolve(`${did}?versionTime=${before}`);
      assert.equal(result.didDocumentMetadata.nextVersionId, '2');
      return { authenticators: result.didDocument?.verificationMethod ?? [], issuer: did, didResolutionResult: result };
    };
    const then = await verifyJWT(jwt, { resolver, didAuthenticator: await asThen() });
    assert.equal(then.verified, true);
    assert.equal(then.signer.id, `${did}#root`);
    await assert.rejects(verifyJWT(fresh, { resolver, didAuthenticator: await asThen() }), /invalid_signature/);
  });
});
