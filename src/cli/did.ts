/** `ddn did …`: create a DID, read it, and every change to it (did-mutations.ts). */
import { readEd25519KeyFile, readX25519KeyFile } from '../client/key-files.js';
import { didDocumentFor } from '../client/keys.js';
import type { ServiceJson } from '../client/types.js';
import { generateDid, isDid } from '../protocol/did.js';
import { multibaseEd25519 } from '../protocol/keys.js';
import type { Profile } from '../protocol/profile.js';
import { group, leaf, UsageError } from './command.js';
import { directoryContext, DIRECTORY_OPTIONS, oneDid, timeoutMs, WAIT_OPTIONS } from './common.js';
import { DID_MUTATIONS } from './did-mutations.js';
import { recipientRef, resolveRecipient } from './recipient.js';

/** The services of a new DID: one `#relay`, `#cache` and `#archive` service for the URLs given of each kind. */
export function initialServices(profile: Profile, did: string, urls: { relay: string[]; cache: string[]; archive: string[] }, retrievalKeyId: string): ServiceJson[] {
  const out: ServiceJson[] = [];
  const endpoint = (list: string[]) => (list.length === 1 ? list[0]! : list);
  if (urls.relay.length > 0) out.push({ id: `${did}#relay`, type: profile.relayServiceType, serviceEndpoint: endpoint(urls.relay) });
  if (urls.cache.length > 0) out.push({ id: `${did}#cache`, type: profile.cacheServiceType, serviceEndpoint: endpoint(urls.cache), authorization: [retrievalKeyId] });
  if (urls.archive.length > 0) out.push({ id: `${did}#archive`, type: profile.archiveServiceType, serviceEndpoint: endpoint(urls.archive), authorization: [retrievalKeyId] });
  return out;
}

const create = leaf('ddn did create', {
  summary: 'register a new DID whose root key is a local Ed25519 key',
  synopsis: '--key FILE [--key-agreement FILE] [--relay URL] [--cache URL] [--archive URL] [--alias ALIAS]',
  description:
    'Registers a random DID of the profile (or --did). The document has the root key as verification method\n' +
    '#root (listed in authentication), an optional X25519 key agreement #x25519-1, and #relay, #cache and #archive\n' +
    'services for the URLs given (the Cache and Archive services authorize #root for retrieval). The Directory\n' +
    'prepares the registration, this command checks the bytes against its own encoding, signs them locally,\n' +
    'submits, and waits until the registration is final.',
  options: {
    key: { type: 'string', arg: 'FILE', help: 'Ed25519 private key file: the root key', required: true },
    'key-agreement': { type: 'string', arg: 'FILE', help: 'X25519 private key file whose public key receives encrypted messages' },
    relay: { type: 'string', multiple: true, arg: 'URL', help: 'endpoint of the #relay service' },
    cache: { type: 'string', multiple: true, arg: 'URL', help: 'endpoint of the #cache service' },
    archive: { type: 'string', multiple: true, arg: 'URL', help: 'endpoint of the #archive service' },
    alias: { type: 'string', arg: 'ALIAS', help: 'an alias to register with the DID' },
    did: { type: 'string', arg: 'DID', help: 'register this DID instead of a random one' },
    ...DIRECTORY_OPTIONS,
    ...WAIT_OPTIONS,
  },
  async run(ctx, o) {
    const dir = await directoryContext(o);
    const key = readEd25519KeyFile(o.key);
    const did = o.did ?? generateDid(dir.profile);
    if (!isDid(did)) throw new UsageError(`'${did}' is not a valid DID`);
    const ka = o['key-agreement'] === undefined ? undefined : readX25519KeyFile(o['key-agreement']);
    const services = initialServices(dir.profile, did, { relay: o.relay, cache: o.cache, archive: o.archive }, `${did}#root`);
    const didDocument = didDocumentFor(did, key.publicKey, { keyAgreementPublicKey: ka?.publicKey, keyAgreementFragment: 'x25519-1', services });
    ctx.info(`registering ${did}: preparing, checking and signing locally…`);
    const submitted = await dir.client.register({ did, key, didDocument, ...(o.alias === undefined ? {} : { alias: o.alias }) });
    ctx.info(`accepted: ${submitted.tx_hash}`);
    const base = { did, root_pubkey: multibaseEd25519(key.publicKey), tx_hash: submitted.tx_hash };
    if (o['no-wait']) return { ...base, registration_status: 'pending', document: didDocument };
    ctx.info('waiting for finality…');
    await dir.client.waitForRegistration(did, { timeoutMs: timeoutMs(o.timeout) });
    const record = await dir.client.resolve(did);
    ctx.info(`registered ${did}`);
    return { ...base, registration_status: 'confirmed', version: record.version, aliases: record.aliases, document: record.document, block_number: record.block_number };
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
    async run(_ctx, o, p) {
      const ref = recipientRef(oneDid(o.did, p), 'the DID');
      const { client } = await directoryContext(o);
      const { did } = await resolveRecipient(client, ref);
      return client[read](did);
    },
  });
}

const resolve = didRead('resolve', 'print the finalized DID record', 'resolve');
const status = didRead('status', 'print the registration status (pending, confirmed, missing)', 'registrationStatus');
const nonces = didRead('nonces', 'print the next usable nonce of every domain', 'nonces');

/** The `did` command. */
export const didCommand = group('ddn did', 'create, read and change DIDs (keys stay on this machine)', { create, resolve, status, nonces, ...DID_MUTATIONS });
