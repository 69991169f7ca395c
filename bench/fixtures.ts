/**
 * The bench's world, built through the public API like any client: recipients registered with the SDK whose
 * documents publish the node's Cache (`PlatformCacheService`, `authorization` = the `#root` key, which is also in
 * `authentication`), envelopes stored over HTTP.
 */
import { DirectoryClient } from '../src/client/directory-client.js';
import { didDocumentFor, generateKeyPair } from '../src/client/keys.js';
import { generateDid } from '../src/protocol/did.js';
import { makeProfile } from '../src/protocol/profile.js';
import { envelopeTemplate, freshEnvelope, type ProofSigner } from './envelopes.js';

export interface BenchRecipient extends ProofSigner {
  /** Hex of the Ed25519 seed (passed to the load generator, which signs proofs itself). */
  seedHex: string;
}

/** Registers `n` recipients in parallel (one block holds them all) and waits until each is confirmed. */
export async function registerRecipients(directoryUrl: string, cacheUrl: string, profileName: string, n: number): Promise<BenchRecipient[]> {
  const profile = makeProfile(profileName);
  const client = new DirectoryClient(directoryUrl, { profile });
  const made = Array.from({ length: n }, () => {
    const key = generateKeyPair();
    const did = generateDid(profile);
    const serviceId = `${did}#cache`;
    const doc = didDocumentFor(did, key.publicKey, {
      services: [{ id: serviceId, type: profile.cacheServiceType, serviceEndpoint: [cacheUrl], authorization: [`${did}#root`] }],
    });
    return { did, key, doc, serviceId, keyId: `${did}#root`, seedHex: Buffer.from(key.seed).toString('hex') };
  });
  await Promise.all(made.map((m) => client.register({ did: m.did, key: m.key, didDocument: m.doc })));
  await Promise.all(made.map((m) => client.waitForRegistration(m.did, { timeoutMs: 60_000, intervalMs: 50 })));
  return made.map(({ did, key, serviceId, keyId, seedHex }) => ({ did, key, serviceId, keyId, seedHex }));
}

/** Stores `count` envelopes of `bodyBytes` to `to` at the Cache (sequentially); returns their ids. */
export async function storeEnvelopes(cacheUrl: string, to: string, count: number, bodyBytes: number): Promise<string[]> {
  const t = envelopeTemplate(to, bodyBytes);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const { body, messageId } = freshEnvelope(t);
    const res = await fetch(`${cacheUrl}/cache/store`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = await res.text();
    if (res.status !== 202) throw new Error(`store failed: ${res.status} ${text.slice(0, 300)}`);
    ids.push(messageId);
  }
  return ids;
}
