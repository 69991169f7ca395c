/**
 * The node identity (http-api.md §0.1, §10.6): `node.key` created once (PKCS#8 PEM, mode 0600), the node DID
 * registered in the node's own ledger on first start with `#node` and `#relay`, left alone on a restart, and
 * its `#relay` service updated when the public Relay URL changed.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataDirError, loadNodeKey, NODE_KEY_FILE } from '../../src/app/node-keys.js';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { nodeDidFor } from '../../src/relay/node-identity.js';
import { startTestNode } from '../support/network.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'ddn-identity-'));
  dirs.push(d);
  return d;
}

describe('node identity', () => {
  it('creates node.key once and registers the node DID; a restart changes nothing; a new relay URL updates #relay', async () => {
    const dataDir = tempDir();
    const first = await startTestNode(['--public-relay-url', 'https://relay-a.example'], dataDir);
    let pem: string;
    let version: number;
    try {
      await first.identity.ready;
      const keyPath = join(dataDir, NODE_KEY_FILE);
      assert.equal(statSync(keyPath).mode & 0o777, 0o600);
      pem = readFileSync(keyPath, 'utf8');
      assert.match(pem, /^-----BEGIN PRIVATE KEY-----\n/);
      assert.equal(first.identity.did, nodeDidFor(makeProfile('platform'), loadNodeKey(dataDir).publicKey));

      const rec = await new DirectoryClient(first.urls.directory!).resolve(first.identity.did);
      const did = first.identity.did;
      assert.deepEqual(
        rec.document?.verificationMethod.map((v) => [v.id, v.type, v.controller]),
        [[`${did}#node`, 'Ed25519VerificationKey2020', did]],
      );
      assert.deepEqual(rec.document?.service, [
        { id: `${did}#relay`, type: 'PlatformRelayService', serviceEndpoint: ['https://relay-a.example'], authorization: [`${did}#node`] },
      ]);
      version = rec.version;
    } finally {
      await first.stop(true);
    }

    const second = await startTestNode(['--public-relay-url', 'https://relay-a.example'], dataDir);
    try {
      await second.identity.ready;
      assert.equal(readFileSync(join(dataDir, NODE_KEY_FILE), 'utf8'), pem, 'the key is never rewritten');
      assert.equal(second.identity.did, first.identity.did);
      const rec = await new DirectoryClient(second.urls.directory!).resolve(second.identity.did);
      assert.equal(rec.version, version, 'no new transaction');
      assert.equal(second.ledger.pendingEntries().length, 0);
    } finally {
      await second.stop(true);
    }

    const third = await startTestNode(['--public-relay-url', 'https://relay-b.example/base'], dataDir);
    try {
      await third.identity.ready;
      const rec = await new DirectoryClient(third.urls.directory!).resolve(third.identity.did);
      assert.deepEqual(rec.document?.service?.[0]?.serviceEndpoint, ['https://relay-b.example/base']);
      assert.ok(rec.version > version);
    } finally {
      await third.stop(true);
    }
  });

  it('refuses a node.key that is not an Ed25519 key', async () => {
    const dataDir = tempDir();
    const { generateKeyPairSync } = await import('node:crypto');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(dataDir, NODE_KEY_FILE), generateKeyPairSync('x25519').privateKey.export({ format: 'pem', type: 'pkcs8' }));
    assert.throws(() => loadNodeKey(dataDir), DataDirError);
  });
});
