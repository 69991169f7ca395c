/** CacheClient retrieval proofs (http-api.md §11.4, §11.6, vector §13.2) and Cache target discovery (§12 item 17). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CacheClient, isoSeconds, type CacheTarget } from '../../src/client/cache-client.js';
import { cacheTargetsFor } from '../../src/client/cache-targets.js';
import type { RenderedDidDocumentJson } from '../../src/client/types.js';
import { keyPairFromSeed } from '../../src/crypto/ed25519.js';
import { multibaseEd25519 } from '../../src/protocol/keys.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { BASE, fakeFetch } from './fake-fetch.js';

const DID = 'did:platform:8DfbjXLth7APvt3qQPgtf';
const key = keyPairFromSeed(new Uint8Array(32).fill(7));
const other = keyPairFromSeed(new Uint8Array(32).fill(8));
const NOW = Date.parse('2026-07-16T12:00:00Z');
const NONCE = '0b7e6c1a-2f3d-4c5b-9a8e-7d6c5b4a3f2e';

describe('CacheClient', () => {
  it('signs the §13.2 vector', () => {
    const target: CacheTarget = { did: DID, serviceId: `${DID}#cache`, endpoint: 'https://cache.example.com', keyId: `${DID}#root`, deviceId: '' };
    const c = new CacheClient(PLATFORM, target, key, { now: () => NOW + 999, nonce: () => NONCE });
    assert.deepEqual(c.proof('summary', '*'), {
      timestamp: '2026-07-16T12:00:00Z',
      nonce: NONCE,
      signature: 'uQmqcO9BjfaJ9jtVSEX0am27/E7laSrQa8ZvSN49FroAnZvDFdh9gB4wOtW2YxXXlWOlJMK6cHWiDpJQVyAiAA==',
    });
    assert.equal(isoSeconds(NOW + 1500), '2026-07-16T12:00:01Z');
  });

  it('sends proof headers on retrievals and the proof in the body of acknowledgements', async () => {
    const { fetch, calls } = fakeFetch((req) =>
      req.path === '/cache/ack' ? { status: 200, body: { acked: 2, message_ids: ['a', 'b'] } } : { status: 200, body: { did: DID, count: 0, messages: [] } },
    );
    const target: CacheTarget = { did: DID, serviceId: `${DID}#cache`, endpoint: BASE, keyId: `${DID}#root`, deviceId: 'phone' };
    const c = new CacheClient(PLATFORM, target, key, { fetch, now: () => NOW, nonce: () => NONCE });
    await c.summary();
    await c.chunks('g/1');
    assert.deepEqual(await c.ack(['b', 'a', 'b']), ['a', 'b']);
    assert.equal(calls[0]!.path, `/cache/summary/${encodeURIComponent(DID)}/phone`);
    assert.equal(calls[1]!.path, `/cache/chunks/${encodeURIComponent(DID)}/g%2F1`);
    const h = calls[0]!.headers;
    assert.deepEqual(
      [h['X-Service-Id'], h['X-Cache-Endpoint'], h['X-Key-Id'], h['X-Timestamp'], h['X-Nonce'], h['X-Device-Id'], h['X-Recipient-DID']],
      [`${DID}#cache`, BASE, `${DID}#root`, '2026-07-16T12:00:00Z', NONCE, 'phone', DID],
    );
    const ack = calls[2]!;
    assert.equal(ack.method, 'POST');
    const body = ack.body as Record<string, unknown>;
    assert.deepEqual(body.message_ids, ['b', 'a']);
    assert.equal(body.signature_b64, ack.headers['X-Signature']);
    assert.equal(body.device_id, 'phone');
    const expected = new CacheClient(PLATFORM, target, key, { now: () => NOW, nonce: () => NONCE }).proof('ack', 'a,b');
    assert.equal(body.signature_b64, expected.signature, 'the ack subject is the sorted, deduplicated ids');
  });
});

describe('cacheTargetsFor', () => {
  const vm = (id: string, pub: Uint8Array, type = 'Ed25519VerificationKey2020') => ({
    id: `${DID}#${id}`,
    type,
    controller: DID,
    publicKeyMultibase: multibaseEd25519(pub),
  });
  const doc = (over: Partial<RenderedDidDocumentJson>): RenderedDidDocumentJson => ({
    id: DID,
    verificationMethod: [vm('root', key.publicKey), vm('k2', key.publicKey), vm('k3', other.publicKey), vm('x', key.publicKey, 'X25519KeyAgreementKey2020')],
    authentication: [`${DID}#root`, `${DID}#k3`],
    keyAgreement: [],
    service: [],
    ...over,
  });

  it('keeps Cache services authorizing a method of this key, once per endpoint; authentication plays no part', () => {
    const d = doc({
      service: [
        {
          id: `${DID}#cache`,
          type: 'PlatformCacheService',
          serviceEndpoint: ['https://a.example/', 'https://b.example'],
          authorization: [`${DID}#k2`, `${DID}#root`],
        },
        { id: `${DID}#cache-2`, type: 'PlatformCacheService', serviceEndpoint: 'https://a.example', authorization: [`${DID}#root`] },
        { id: `${DID}#cache-3`, type: 'PlatformCacheService', serviceEndpoint: 'https://c.example', authorization: [`${DID}#k3`, `${DID}#x`] },
        { id: `${DID}#archive`, type: 'PlatformArchiveService', serviceEndpoint: 'https://d.example', authorization: [`${DID}#root`] },
        { id: `${DID}#none`, type: 'PlatformCacheService', serviceEndpoint: 'https://e.example' },
      ],
    });
    assert.deepEqual(cacheTargetsFor(PLATFORM, d, key.publicKey, { deviceId: 'p' }), [
      { did: DID, serviceId: `${DID}#cache`, endpoint: 'https://a.example', keyId: `${DID}#k2`, deviceId: 'p' },
      { did: DID, serviceId: `${DID}#cache`, endpoint: 'https://b.example', keyId: `${DID}#k2`, deviceId: 'p' },
    ]);
    assert.equal(cacheTargetsFor(PLATFORM, d, key.publicKey, { keyId: `${DID}#k2` }).length, 2, 'k2 is authorised though not in authentication');
    assert.deepEqual(
      cacheTargetsFor(PLATFORM, doc({ ...d, service: [d.service[0]!] }), other.publicKey),
      [],
      'k3 is in authentication but #cache does not authorise it',
    );
    assert.equal(
      cacheTargetsFor(PLATFORM, doc({ ...d, authentication: [] }), key.publicKey, { keyId: `${DID}#k2` }).length,
      2,
      'an empty authentication list does not restrict',
    );
  });
});
