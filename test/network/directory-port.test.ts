/** The DirectoryPort over HTTP answers exactly what the in-process port answers, and fails closed. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { HttpDirectoryPort } from '../../src/adapters/directory-port-http.js';
import { didDocumentFor, keyPairFromSeed } from '../../src/client/keys.js';
import { isDdnError } from '../../src/base/errors.js';
import { systemClock } from '../../src/base/clock.js';
import { LocalDirectoryPort } from '../../src/directory/local-port.js';
import { generateDid } from '../../src/protocol/did.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { startTestNode, type TestNode } from '../support/network.js';

describe('HttpDirectoryPort', () => {
  let node: TestNode;
  const key = keyPairFromSeed(new Uint8Array(32).fill(61));
  const did = generateDid(PLATFORM, new Uint8Array(16).fill(61));

  before(async () => {
    node = await startTestNode();
    const client = new DirectoryClient(node.urls.directory!);
    const doc = didDocumentFor(did, key.publicKey, {
      services: [
        { id: `${did}#cache`, type: 'PlatformCacheService', serviceEndpoint: ['https://cache.example.com'], authorization: [`${did}#root`], priority: 2 },
      ],
    });
    await client.waitForTransaction((await client.register({ did, key, didDocument: doc, alias: 'port-test' })).tx_hash);
  });
  after(async () => node.stop());

  it('returns the same delivery view as the in-process port', async () => {
    const http = new HttpDirectoryPort(node.urls.directory!);
    const local = new LocalDirectoryPort(node.ledger, systemClock);
    const a = await http.resolveDelivery(did, null, 'invoice');
    const b = await local.resolveDelivery(did, null, 'invoice');
    assert.ok(a && b);
    assert.deepEqual(a, b);
    assert.equal(a.recipient.document?.service?.[0]?.priority, 2);
    assert.deepEqual(await http.getDid(did), b.recipient);
  });

  it('answers null for an unknown DID and resolves aliases', async () => {
    const http = new HttpDirectoryPort(node.urls.directory!);
    assert.equal(await http.resolveDelivery(generateDid(PLATFORM, new Uint8Array(16).fill(62)), null, null), null);
    assert.equal(await http.lookupAlias('port-test'), did);
    assert.equal(await http.lookupAlias('nobody-here'), null);
  });

  it('reports an unknown persona as such', async () => {
    const view = await new HttpDirectoryPort(node.urls.directory!).resolveDelivery(did, 'unknown.example.org', null);
    assert.equal(view?.personaState, 'persona_not_found');
    assert.equal(view?.policy, null);
  });

  it('fails closed with policy_lookup_failed when the Directory is unreachable', async () => {
    const dead = new HttpDirectoryPort('http://127.0.0.1:9', { timeoutMs: 2000 });
    await assert.rejects(dead.resolveDelivery(did, null, null), (e: unknown) => isDdnError(e) && e.code === 'policy_lookup_failed');
    await assert.rejects(dead.lookupAlias('x'), (e: unknown) => isDdnError(e) && e.code === 'policy_lookup_failed');
  });
});
