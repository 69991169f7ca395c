/**
 * Registers a DID on a running Directory, signs a JWT with its root key and verifies it with did-jwt through the
 * SDK's did-resolver driver (W3C DID Resolution at the Directory's `/1.0/identifiers`). did-jwt and did-resolver
 * are the project's devDependencies; an application installs them itself.
 * Usage: npx tsx examples/verify-jwt.ts http://127.0.0.1:8080
 */
import { createJWT, EdDSASigner, verifyJWT } from 'did-jwt';
import { Resolver } from 'did-resolver';
import { DirectoryClient, didDocumentFor, generateDid, generateKeyPair, getResolver, makeProfile } from '../src/client/index.js';

async function main(): Promise<void> {
  const [directoryUrl = 'http://127.0.0.1:8080'] = process.argv.slice(2);
  const client = new DirectoryClient(directoryUrl);
  const key = generateKeyPair();
  const did = generateDid(makeProfile((await client.health()).profile));
  await client.register({ did, key, didDocument: didDocumentFor(did, key.publicKey) });
  await client.waitForRegistration(did);

  const resolver = new Resolver(getResolver({ directoryUrl, method: did.split(':')[1] }));
  const jwt = await createJWT({ sub: 'alice' }, { issuer: did, signer: EdDSASigner(key.seed) }, { alg: 'EdDSA' });
  const { verified, signer } = await verifyJWT(jwt, { resolver });
  process.stdout.write(`${JSON.stringify({ did, verified, signer: signer.id })}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
