/** `ddn did …`: create a DID (recorded in the identity book), list the book, read a DID, and every change to it (did-mutations.ts). */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { generatePrivateKey, readEd25519KeyFile, readX25519KeyFile, writePrivateKeyFile } from '../client/key-files.js';
import { didDocumentFor } from '../client/keys.js';
import type { ServiceJson } from '../client/types.js';
import { generateDid, isDid } from '../protocol/did.js';
import { multibaseEd25519 } from '../protocol/keys.js';
import type { Profile } from '../protocol/profile.js';
import { group, leaf, UsageError } from './command.js';
import { commandFetch, directoryContext, DIRECTORY_OPTIONS, oneDid, timeoutMs, WAIT_OPTIONS } from './common.js';
import { directoryHealth, networkOf } from './directory-network.js';
import { DID_MUTATIONS } from './did-mutations.js';
import { absolute, addIdentity, bookPath, identitiesOn, identityName, identityWithKey, IdentityBookError, keysDir, readBook, usable } from './identity-book.js';
import { recipientRef, resolveRecipient } from './recipient.js';

/** The services of a new DID: one `#relay`, `#cache` and `#archive` service for the URLs given of each kind. */
export function initialServices(
  profile: Profile,
  did: string,
  urls: { relay: string[]; cache: string[]; archive: string[] },
  retrievalKeyId: string,
): ServiceJson[] {
  const out: ServiceJson[] = [];
  const endpoint = (list: string[]) => (list.length === 1 ? list[0]! : list);
  if (urls.relay.length > 0) out.push({ id: `${did}#relay`, type: profile.relayServiceType, serviceEndpoint: endpoint(urls.relay) });
  if (urls.cache.length > 0)
    out.push({ id: `${did}#cache`, type: profile.cacheServiceType, serviceEndpoint: endpoint(urls.cache), authorization: [retrievalKeyId] });
  if (urls.archive.length > 0)
    out.push({ id: `${did}#archive`, type: profile.archiveServiceType, serviceEndpoint: endpoint(urls.archive), authorization: [retrievalKeyId] });
  return out;
}

const create = leaf('ddn did create', {
  summary: 'register a new DID and record it in the identity book',
  synopsis: '[--key FILE [--key-agreement FILE]] [--relay URL] [--cache URL] [--archive URL] [--alias ALIAS] [--new]',
  description:
    'Registers a random DID of the profile (or --did). The document has the root key as verification method\n' +
    '#root (listed in authentication), an optional X25519 key agreement #x25519-1, and #relay, #cache and #archive\n' +
    'services for the URLs given (the Cache and Archive services authorize #root for retrieval). The Directory\n' +
    'prepares the registration, this command checks the bytes against its own encoding, signs them locally,\n' +
    'submits, and waits until the registration is final.\n' +
    'Without --key it creates both keys (Ed25519 root, X25519 key agreement) in the keys/ directory of the identity\n' +
    'book ($XDG_CONFIG_HOME/ddn, default ~/.config/ddn), never in the working directory. Once the Directory accepts\n' +
    "the registration, the DID, its alias and its key files are recorded in the book: 'ddn did list' shows them, and\n" +
    'commands that act as a DID (receive, the DID changes) take --did and --key from it. A key already recorded for\n' +
    'another DID is refused unless --new is given.',
  options: {
    key: { type: 'string', arg: 'FILE', help: 'Ed25519 private key file: the root key (default: a new one in the book)' },
    'key-agreement': {
      type: 'string',
      arg: 'FILE',
      help: 'X25519 private key file whose public key receives encrypted messages (default without --key: a new one)',
    },
    relay: { type: 'string', multiple: true, arg: 'URL', help: 'endpoint of the #relay service' },
    cache: { type: 'string', multiple: true, arg: 'URL', help: 'endpoint of the #cache service' },
    archive: { type: 'string', multiple: true, arg: 'URL', help: 'endpoint of the #archive service' },
    alias: { type: 'string', arg: 'ALIAS', help: 'an alias to register with the DID' },
    did: { type: 'string', arg: 'DID', help: 'register this DID instead of a random one' },
    new: { type: 'boolean', help: 'register another DID for a key the identity book already holds' },
    ...DIRECTORY_OPTIONS,
    ...WAIT_OPTIONS,
  },
  async run(ctx, o) {
    const env = ctx.io.env;
    const dir = await directoryContext(o, ctx.info);
    const did = o.did ?? generateDid(dir.profile);
    if (!isDid(did)) throw new UsageError(`'${did}' is not a valid DID`);
    const files =
      o.key === undefined
        ? newKeyFiles(env, did)
        : { key: absolute(o.key), keyAgreement: o['key-agreement'] === undefined ? undefined : absolute(o['key-agreement']), created: [] };
    try {
      const key = readEd25519KeyFile(files.key);
      const rootPubkey = multibaseEd25519(key.publicKey);
      const network = await dir.network();
      const book = identitiesOn(env, readBook(env), network, dir.client.baseUrl);
      const known = identityWithKey(usable(book), rootPubkey);
      if (known !== undefined && !o.new) {
        throw new IdentityBookError(
          'key_already_registered',
          `${files.key} is already the root key of ${identityName(known)} in the identity book; give --new to register another DID with it`,
        );
      }
      const ka = files.keyAgreement === undefined ? undefined : readX25519KeyFile(files.keyAgreement);
      const services = initialServices(dir.profile, did, { relay: o.relay, cache: o.cache, archive: o.archive }, `${did}#root`);
      const didDocument = didDocumentFor(did, key.publicKey, { keyAgreementPublicKey: ka?.publicKey, keyAgreementFragment: 'x25519-1', services });
      ctx.info(`registering ${did}: preparing, checking and signing locally…`);
      const submitted = await dir.client.register({ did, key, didDocument, ...(o.alias === undefined ? {} : { alias: o.alias }) });
      files.created = [];
      ctx.info(`accepted: ${submitted.tx_hash}`);
      const bookFile = addIdentity(env, {
        did,
        ...(o.alias === undefined ? {} : { alias: o.alias }),
        key: files.key,
        ...(files.keyAgreement === undefined ? {} : { key_agreement: files.keyAgreement }),
        root_pubkey: rootPubkey,
        directory: dir.client.baseUrl,
        profile: dir.profile.p,
        network,
        tx_hash: submitted.tx_hash,
        created_at: new Date().toISOString(),
      });
      ctx.info(`recorded in ${bookFile}`);
      const base = {
        did,
        root_pubkey: rootPubkey,
        tx_hash: submitted.tx_hash,
        key: files.key,
        ...(files.keyAgreement === undefined ? {} : { key_agreement: files.keyAgreement }),
      };
      ctx.progress({ ...base, registration_status: 'pending' });
      if (o['no-wait']) return { ...base, registration_status: 'pending', document: didDocument };
      ctx.info('waiting for finality…');
      await dir.client.waitForRegistration(did, { timeoutMs: timeoutMs(o.timeout) });
      const record = await dir.client.resolve(did);
      ctx.info(`registered ${did}`);
      return {
        ...base,
        registration_status: 'confirmed',
        version: record.version,
        aliases: record.aliases,
        document: record.document,
        block_number: record.block_number,
      };
    } finally {
      // keys made for a registration that was never accepted are of no use
      for (const f of files.created) rmSync(f, { force: true });
    }
  },
});

/** New root and key-agreement key files in the book's keys/ directory, named after the DID. */
function newKeyFiles(env: NodeJS.ProcessEnv, did: string): { key: string; keyAgreement: string; created: string[] } {
  const base = join(keysDir(env), did.replace(/[^A-Za-z0-9._-]/g, '_'));
  const files = { key: `${base}.pem`, keyAgreement: `${base}-x25519.pem`, created: [] as string[] };
  writePrivateKeyFile(files.key, generatePrivateKey('ed25519'));
  files.created.push(files.key);
  writePrivateKeyFile(files.keyAgreement, generatePrivateKey('x25519'));
  files.created.push(files.keyAgreement);
  return files;
}

const list = leaf('ddn did list', {
  summary: 'list the identities of the local identity book, with their network',
  synopsis: '',
  description:
    'Prints the identities `ddn did create` recorded on this machine: DID, alias, key files, Directory, and the\n' +
    'network (chain id and genesis hash) each lives in; `status` marks a DID deleted or deactivated through ddn.\n' +
    'An alias names the identity of the network a command talks to. Identities recorded by an older ddn, which\n' +
    "knew no networks, are placed in their Directory's network here (asked with short deadlines; one that does\n" +
    'not answer leaves them unplaced, "network": null, until it does).\n' +
    'The book is $XDG_CONFIG_HOME/ddn/identities.json (default ~/.config/ddn/identities.json).',
  options: {},
  async run(ctx) {
    const env = ctx.io.env;
    const book = readBook(env);
    const unplaced = [...new Set(book.filter((i) => i.network === undefined).map((i) => i.directory))];
    for (const url of unplaced) {
      try {
        identitiesOn(
          env,
          book,
          networkOf(await directoryHealth(url, commandFetch({ 'connect-timeout': '2', 'answer-timeout': '5' }, 'the Directory', undefined))),
          url,
        );
      } catch {
        ctx.info(`the Directory at ${url} did not answer: its identities stay without a network for now`);
      }
    }
    return { book: bookPath(env), identities: book.map((i) => ({ ...i, network: i.network ?? null })) };
  },
});

const DID_ARG = { did: { type: 'string', arg: 'DID', help: 'the DID or its alias (or give it as the argument)' }, ...DIRECTORY_OPTIONS } as const;

/** A read of one DID through the SDK's DirectoryClient. */
function didRead(name: string, summary: string, read: 'resolve' | 'registrationStatus' | 'nonces') {
  return leaf(`ddn did ${name}`, {
    summary,
    synopsis: 'DID|ALIAS',
    options: DID_ARG,
    positionals: ['DID'],
    async run(ctx, o, p) {
      const ref = recipientRef(oneDid(o.did, p), 'the DID');
      const { client } = await directoryContext(o, ctx.info);
      const { did } = await resolveRecipient(client, ref);
      return client[read](did);
    },
  });
}

const resolve = didRead('resolve', 'print the finalized DID record', 'resolve');
const status = didRead('status', 'print the registration status (pending, confirmed, missing)', 'registrationStatus');
const nonces = didRead('nonces', 'print the next usable nonce of every domain', 'nonces');

/** The `did` command. */
export const didCommand = group('ddn did', 'create, list, read and change DIDs (keys stay on this machine)', {
  create,
  list,
  resolve,
  status,
  nonces,
  ...DID_MUTATIONS,
});
