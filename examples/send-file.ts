/**
 * Sends a file from one new DID to another and receives it, with the SDK only (`ddn/client`): two identities
 * (an Ed25519 root key, an X25519 key agreement, a Relay and a Cache service each) are registered, Alice sends the
 * file encrypted for Bob and signed as herself, and Bob fetches it from his Cache, decrypts it, checks its size,
 * SHA-256 and Alice's signature, writes it into OUTPUT_DIR and acknowledges it.
 * Against a local node started with `npx ddn serve --allow-private-endpoints` (it publishes loopback endpoints):
 *   npx tsx examples/send-file.ts FILE [OUTPUT_DIR] [DIRECTORY_URL RELAY_URL CACHE_URL]
 */
import { mkdirSync } from 'node:fs';
import {
  CacheClient,
  DirectoryClient,
  FileReceiver,
  RelayClient,
  cacheTargetsFor,
  didDocumentFor,
  directorySenderCheck,
  directorySink,
  fileSource,
  generateDid,
  generateKeyPair,
  generateX25519KeyPair,
  makeProfile,
  sendFile,
  type GeneratedKeyPair,
  type Profile,
  type X25519KeyPair,
} from 'ddn/client';

interface Identity {
  did: string;
  key: GeneratedKeyPair;
  agreement: X25519KeyPair;
}

/** A new DID whose messages go through `relayUrl` and wait at `cacheUrl`, registered and final. */
async function newIdentity(directory: DirectoryClient, profile: Profile, relayUrl: string, cacheUrl: string): Promise<Identity> {
  const key = generateKeyPair();
  const agreement = generateX25519KeyPair();
  const did = generateDid(profile);
  const services = [
    { id: `${did}#relay`, type: profile.relayServiceType, serviceEndpoint: [relayUrl] },
    // the key that may sign retrieval proofs at this Cache
    { id: `${did}#cache`, type: profile.cacheServiceType, serviceEndpoint: [cacheUrl], authorization: [`${did}#root`] },
  ];
  await directory.register({ did, key, didDocument: didDocumentFor(did, key.publicKey, { keyAgreementPublicKey: agreement.publicKey, services }) });
  await directory.waitForRegistration(did);
  return { did, key, agreement };
}

async function main(): Promise<void> {
  const [path, outputDir = 'inbox', directoryUrl = 'http://127.0.0.1:8080', relayUrl = 'http://127.0.0.1:8081', cacheUrl = 'http://127.0.0.1:8082'] =
    process.argv.slice(2);
  if (path === undefined) throw new Error('usage: send-file.ts FILE [OUTPUT_DIR] [DIRECTORY_URL RELAY_URL CACHE_URL]');
  const directory = new DirectoryClient(directoryUrl);
  const profile = makeProfile((await directory.health()).profile);
  const alice = await newIdentity(directory, profile, relayUrl, cacheUrl);
  const bob = await newIdentity(directory, profile, relayUrl, cacheUrl);

  // Alice sends: the file is hashed once, then read, encrypted and posted part by part.
  const sent = await sendFile({
    profile,
    directory,
    relay: new RelayClient(relayUrl),
    to: bob.did,
    source: await fileSource(path),
    sender: { did: alice.did, keyId: 'root', sign: (bytes) => alice.key.sign(bytes) },
  });
  process.stderr.write(`sent ${sent.name} (${sent.size_bytes} bytes, ${sent.total_chunks} chunk(s)): ${sent.code}\n`);

  // Bob receives from every Cache service of his DID that authorizes his key.
  const record = await directory.resolve(bob.did);
  if (record.document === null) throw new Error(`${bob.did} has no document`);
  const caches = cacheTargetsFor(profile, record.document, bob.key.publicKey).map((t) => new CacheClient(profile, t, bob.key));
  mkdirSync(outputDir, { recursive: true });
  const receiver = new FileReceiver(profile, caches, bob.agreement.privateKey, directorySink(outputDir), undefined, {
    checkSender: directorySenderCheck(profile, directory),
  });
  const report = await receiver.sweep();
  for (const e of report.errors) process.stderr.write(`error ${e.code}: ${e.message}\n`);
  const files = report.files.map((f) => ({ path: f.path, size_bytes: f.size_bytes, sha256: f.sha256, sender: f.sender?.did ?? null }));
  process.stdout.write(`${JSON.stringify({ from: alice.did, to: bob.did, sha256: sent.sha256, files }, null, 2)}\n`);
  if (report.errors.length > 0 || files.length !== 1) process.exitCode = 1;
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
