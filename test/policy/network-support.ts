/**
 * Shared parts of the policy network tests: a Directory node, Cache and Relay nodes talking to it over real HTTP
 * (`--allow-private-endpoints` for loopback), recipients and service DIDs registered through the Directory's
 * routes, v3 policies written through prepare → sign → submit, and retrieval from a Cache with signed proofs.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Ed25519KeyPair } from '../../src/crypto/ed25519.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { isoSeconds, proofHeaders, type Recipient } from '../cache/harness.js';
import { fetchJson, httpDirectory, type FetchReply } from '../cache/http-support.js';
import type { DirectoryHarness } from '../support/directory-harness.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { policyJson, writeV3 } from '../support/policy-flows.js';
import { didOf, keyOf, kid, registerDid, vmOf } from '../support/directory-flows.js';
import { multibaseX25519 } from '../../src/protocol/keys.js';

export type Body = Record<string, unknown>;
export const profile = makeProfile('platform');
export const enc = encodeURIComponent;

/** The Directory of a test network as the flows of test/support see it. */
export function directoryOf(dir: TestNode): DirectoryHarness {
  return httpDirectory(dir) as DirectoryHarness;
}

export const startDirectoryNode = (extra: string[] = []) => startTestNode(['--roles', 'directory', '--allow-private-endpoints', ...extra]);
export const startCacheNode = (dir: TestNode, dataDir?: string, port = 0) =>
  startTestNode(
    ['--roles', 'cache', '--directory-url', dir.urls.directory!, '--cache-port', String(port), '--allow-private-endpoints'],
    ...(dataDir === undefined ? [] : [dataDir]),
  );
export async function startRelayNode(dir: TestNode): Promise<TestNode> {
  const relay = await startTestNode(['--roles', 'relay', '--directory-url', dir.urls.directory!, '--allow-private-endpoints']);
  await relay.identity.ready;
  return relay;
}

/** A client envelope to `to`. */
export function envelope(to: string, over: Body = {}): Body {
  return {
    message_id: randomUUID(),
    to,
    tag: 'invoice',
    timestamp: isoSeconds(Date.now()),
    payload: { ciphertext_b64: Buffer.from(randomUUID()).toString('base64') },
    ...over,
  };
}

/** `POST {relay}/relay`. */
export const relayPost = (relay: TestNode, body: Body) => fetchJson(`${relay.urls.relay}/relay`, { body });

/** Writes a v3 policy on `scope`/`id` owned by `owner` (signed with its root key) and waits for finality. */
export async function setPolicy(
  dir: TestNode,
  owner: { did: string; key: Ed25519KeyPair },
  scope: 'did' | 'persona' | 'application',
  id: string,
  ruleset: Body[],
): Promise<Body> {
  const type = scope === 'did' ? 'DID' : scope === 'persona' ? 'PERSONA' : 'APPLICATION';
  return writeV3(directoryOf(dir), owner.key, scope, id, {
    action: 'set_policy_v3',
    policy: policyJson(type, id, owner.did, ruleset),
    signer_key_id: 'root',
  });
}

/** Every message the recipient can pull from `cacheUrl` (the recipient's `#cache` service must list it). */
export async function pullFrom(cacheUrl: string, r: Pick<Recipient, 'did' | 'key' | 'keyId' | 'serviceId'>): Promise<Body[]> {
  const headers = proofHeaders(profile, r, 'pull', '*', { endpoint: cacheUrl, nowMs: Date.now() });
  const res: FetchReply = await fetchJson(`${cacheUrl}/cache/messages/${enc(r.did)}`, { headers });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.messages as Body[];
}

/** The pulled envelope with `message_id`, or undefined. */
export async function pulledEnvelope(
  cacheUrl: string,
  r: Pick<Recipient, 'did' | 'key' | 'keyId' | 'serviceId'>,
  messageId: unknown,
): Promise<Body | undefined> {
  const m = (await pullFrom(cacheUrl, r)).find((x) => x.message_id === messageId);
  return m === undefined ? undefined : (m.envelope as Body);
}

/**
 * Registers `seed`'s DID as a control recipient: key `#key-1`, X25519 key agreement `#ka-1` (so Send steps can
 * encrypt to it), a `#cache` service on `cacheUrl`, and any `extraServices`.
 */
export async function registerControlDid(dir: TestNode, seed: number, kaPublicKey: Uint8Array, cacheUrl: string, extraServices: Body[] = []): Promise<void> {
  const did = didOf(seed, profile.p);
  const key = keyOf(seed);
  await registerDid(directoryOf(dir), seed, {
    did,
    key,
    document: {
      id: did,
      verificationMethod: [vmOf(did, 'key-1', key)],
      authentication: [kid(did, 'key-1')],
      keyAgreement: [{ id: kid(did, 'ka-1'), type: 'X25519KeyAgreementKey2020', controller: did, publicKeyMultibase: multibaseX25519(kaPublicKey) }],
      service: [{ id: kid(did, 'cache'), type: 'PlatformCacheService', serviceEndpoint: [cacheUrl], authorization: [kid(did, 'key-1')] }, ...extraServices],
    },
  });
}
