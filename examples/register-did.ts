/**
 * Registers a new DID on a running Directory and resolves it — keys are generated and used here, never sent.
 * Usage: npx tsx examples/register-did.ts http://127.0.0.1:8080 [alias]
 */
import { DirectoryClient, didDocumentFor, generateDid, generateKeyPair, makeProfile } from 'ddn/client';

async function main(): Promise<void> {
  const [directoryUrl = 'http://127.0.0.1:8080', alias] = process.argv.slice(2);
  const client = new DirectoryClient(directoryUrl);
  const health = await client.health();
  const profile = makeProfile(health.profile);
  const key = generateKeyPair();
  const did = generateDid(profile);
  const submitted = await client.register({ did, key, didDocument: didDocumentFor(did, key.publicKey), ...(alias ? { alias } : {}) });
  process.stderr.write(`submitted ${submitted.tx_hash}, waiting for finality…\n`);
  await client.waitForRegistration(did);
  const record = await client.resolve(did);
  process.stdout.write(`${JSON.stringify({ did, seed_hex: Buffer.from(key.seed).toString('hex'), record }, null, 2)}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
