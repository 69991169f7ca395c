/** `ddn did alias|verification-method|authentication|key-agreement|service|device|root-key|document|deactivate|delete`. */
import { messageOf } from '../base/guards.js';
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { DidDocumentJson, ServiceJson, VerificationMethodJson } from '../client/types.js';
import { multibaseEd25519, multibaseX25519 } from '../protocol/keys.js';
import { group, leaf, UsageError, type CommandContext, type OptionDefs } from './command.js';
import { didUrl, directoryContext, positiveInt, serviceType } from './common.js';
import { MUTATION_OPTIONS, mutate, type MutationArgs } from './did-submit.js';
import { markIdentity } from './identity-book.js';
import type { Profile } from '../protocol/profile.js';
import type { CliCommand } from './io.js';

const ID = { id: { type: 'string', arg: 'ID', help: 'id (fragment or full DID URL)', required: true } } as const;

/** A mutation leaf: `extra` options besides the common ones. */
function mutation<E extends OptionDefs>(
  path: string,
  summary: string,
  synopsis: string,
  extra: E,
  run: Parameters<typeof leaf<E & typeof MUTATION_OPTIONS>>[1]['run'],
): CliCommand {
  return leaf(path, { summary, synopsis: `[--did DID|ALIAS] [--key FILE] ${synopsis}`.trim(), options: { ...extra, ...MUTATION_OPTIONS }, run });
}

/** The public key of `--public-key` (multibase, as given) or `--public-key-file` (any PEM key; its public half). */
function publicKeyOption(o: { 'public-key'?: string; 'public-key-file'?: string }, kind: 'ed25519' | 'x25519'): string {
  if ((o['public-key'] === undefined) === (o['public-key-file'] === undefined)) throw new UsageError('give exactly one of --public-key and --public-key-file');
  if (o['public-key'] !== undefined) return o['public-key'];
  let key;
  try {
    key = createPublicKey(readFileSync(o['public-key-file']!));
  } catch (e) {
    throw new UsageError(`cannot read a key from ${o['public-key-file']}: ${messageOf(e)}`);
  }
  if (key.asymmetricKeyType !== kind) throw new UsageError(`${o['public-key-file']} holds a ${key.asymmetricKeyType ?? 'unknown'} key, expected ${kind}`);
  const spki = key.export({ format: 'der', type: 'spki' });
  const raw = new Uint8Array(spki.subarray(spki.length - 32));
  return kind === 'ed25519' ? multibaseEd25519(raw) : multibaseX25519(raw);
}

const KEY_OPTIONS = {
  ...ID,
  'public-key': { type: 'string', arg: 'MULTIBASE', help: 'the public key as publicKeyMultibase' },
  'public-key-file': { type: 'string', arg: 'FILE', help: 'take the public key from this key file (private or public PEM)' },
} as const;

const vmOptions = { ...KEY_OPTIONS, type: { type: 'string', arg: 'TYPE', help: 'verification-method type', default: 'Ed25519VerificationKey2020' } } as const;
const kaOptions = { ...KEY_OPTIONS, type: { type: 'string', arg: 'TYPE', help: 'key-agreement type', default: 'X25519KeyAgreementKey2020' } } as const;

function method(
  did: string,
  o: { id: string; type?: string; 'public-key'?: string; 'public-key-file'?: string },
  kind: 'ed25519' | 'x25519',
): VerificationMethodJson {
  return { id: didUrl(did, o.id), type: o.type!, controller: did, publicKeyMultibase: publicKeyOption(o, kind) };
}

const P = 'ddn did';
const alias = group(`${P} alias`, 'add, rename or remove an alias', {
  add: mutation(`${P} alias add`, 'add an alias', '--alias ALIAS', { alias: { type: 'string', arg: 'ALIAS', help: 'the alias', required: true } }, (ctx, o) =>
    mutate(ctx, o, 'add_alias', { alias: o.alias }),
  ),
  update: mutation(
    `${P} alias update`,
    'rename an alias',
    '--old ALIAS --new ALIAS',
    {
      old: { type: 'string', arg: 'ALIAS', help: 'current alias', required: true },
      new: { type: 'string', arg: 'ALIAS', help: 'new alias', required: true },
    },
    (ctx, o) => mutate(ctx, o, 'update_alias', { old_alias: o.old, new_alias: o.new }),
  ),
  remove: mutation(
    `${P} alias remove`,
    'remove an alias',
    '--alias ALIAS',
    { alias: { type: 'string', arg: 'ALIAS', help: 'the alias', required: true } },
    (ctx, o) => mutate(ctx, o, 'remove_alias', { alias: o.alias }),
  ),
});

const verificationMethod = group(`${P} verification-method`, 'add, replace or remove a verification method', {
  add: mutation(`${P} verification-method add`, 'add a verification method', '--id ID (--public-key MB | --public-key-file FILE)', vmOptions, (ctx, o) =>
    mutate(ctx, o, 'AddVerificationMethod', { verification_method: method(o.did, o, 'ed25519') }),
  ),
  update: mutation(
    `${P} verification-method update`,
    'replace a verification method',
    '--id ID (--public-key MB | --public-key-file FILE)',
    vmOptions,
    (ctx, o) => mutate(ctx, o, 'UpdateVerificationMethod', { verification_method: method(o.did, o, 'ed25519') }),
  ),
  remove: mutation(`${P} verification-method remove`, 'remove a verification method', '--id ID', ID, (ctx, o) =>
    mutate(ctx, o, 'RemoveVerificationMethod', { id: didUrl(o.did, o.id) }),
  ),
});

const authentication = group(`${P} authentication`, 'grant or withdraw authentication for a verification method', {
  add: mutation(`${P} authentication add`, 'list a verification method in authentication', '--id ID', ID, (ctx, o) =>
    mutate(ctx, o, 'AddAuthentication', { id: didUrl(o.did, o.id) }),
  ),
  remove: mutation(`${P} authentication remove`, 'remove a verification method from authentication', '--id ID', ID, (ctx, o) =>
    mutate(ctx, o, 'RemoveAuthentication', { id: didUrl(o.did, o.id) }),
  ),
});

const keyAgreement = group(`${P} key-agreement`, 'add, replace or remove an X25519 key agreement', {
  add: mutation(`${P} key-agreement add`, 'add a key agreement', '--id ID (--public-key MB | --public-key-file FILE)', kaOptions, (ctx, o) =>
    mutate(ctx, o, 'AddKeyAgreement', { key_agreement: method(o.did, o, 'x25519') }),
  ),
  update: mutation(`${P} key-agreement update`, 'replace a key agreement', '--id ID (--public-key MB | --public-key-file FILE)', kaOptions, (ctx, o) =>
    mutate(ctx, o, 'UpdateKeyAgreement', { key_agreement: method(o.did, o, 'x25519') }),
  ),
  remove: mutation(`${P} key-agreement remove`, 'remove a key agreement', '--id ID', ID, (ctx, o) =>
    mutate(ctx, o, 'RemoveKeyAgreement', { id: didUrl(o.did, o.id) }),
  ),
});

const serviceOptions = {
  ...ID,
  type: { type: 'string', arg: 'TYPE', help: 'relay, cache, archive, application-control, or a literal service type', required: true },
  endpoint: { type: 'string', multiple: true, arg: 'URL', help: 'service endpoint', required: true },
  authorization: { type: 'string', multiple: true, arg: 'ID', help: 'authorized verification method (fragment or full id)' },
  priority: { type: 'string', arg: 'N', help: 'priority (lower first)' },
} as const;

function service(o: { did: string; id: string; type: string; endpoint: string[]; authorization: string[]; priority?: string }, profile: Profile): ServiceJson {
  const s: ServiceJson = {
    id: didUrl(o.did, o.id),
    type: serviceType(profile, o.type),
    serviceEndpoint: o.endpoint.length === 1 ? o.endpoint[0]! : o.endpoint,
  };
  if (o.authorization.length > 0) s.authorization = o.authorization.map((a) => didUrl(o.did, a));
  const priority = o.priority === undefined ? undefined : o.priority === '0' ? 0 : positiveInt('priority', o.priority);
  if (priority !== undefined) s.priority = priority;
  return s;
}

const services = group(`${P} service`, 'add, replace or remove a service', {
  add: mutation(`${P} service add`, 'add a service', '--id ID --type TYPE --endpoint URL…', serviceOptions, (ctx, o) =>
    mutate(ctx, o, 'AddService', (d) => ({ service: service(o, d.profile) })),
  ),
  update: mutation(`${P} service update`, 'replace a service', '--id ID --type TYPE --endpoint URL…', serviceOptions, (ctx, o) =>
    mutate(ctx, o, 'UpdateService', (d) => ({ service: service(o, d.profile) })),
  ),
  remove: mutation(`${P} service remove`, 'remove a service', '--id ID', ID, (ctx, o) => mutate(ctx, o, 'RemoveService', { id: didUrl(o.did, o.id) })),
});

const DEVICE = { 'device-id': { type: 'string', arg: 'ID', help: 'device id (1-64 bytes)', required: true } } as const;
const device = group(`${P} device`, 'add, rename, remove or tombstone a device', {
  add: mutation(`${P} device add`, 'add a device', '--device-id ID', DEVICE, (ctx, o) => mutate(ctx, o, 'add_device', { device_id: o['device-id'] })),
  update: mutation(
    `${P} device update`,
    'rename a device',
    '--device-id ID --new-device-id ID',
    { ...DEVICE, 'new-device-id': { type: 'string', arg: 'ID', help: 'new device id', required: true } },
    (ctx, o) => mutate(ctx, o, 'update_device', { device_id: o['device-id'], new_device_id: o['new-device-id'] }),
  ),
  remove: mutation(`${P} device remove`, 'remove a device', '--device-id ID', DEVICE, (ctx, o) =>
    mutate(ctx, o, 'remove_device', { device_id: o['device-id'] }),
  ),
  tombstone: mutation(`${P} device tombstone`, 'tombstone a device', '--device-id ID', DEVICE, (ctx, o) =>
    mutate(ctx, o, 'tombstone_device', { device_id: o['device-id'] }),
  ),
});

const rootKey = group(`${P} root-key`, 'rotate the root key', {
  rotate: mutation(
    `${P} root-key rotate`,
    'replace the root key (signed by the current root or a verification method)',
    '(--new-key FILE | --new-public-key KEY)',
    {
      'new-key': { type: 'string', arg: 'FILE', help: 'the new Ed25519 key file (its public half is sent)' },
      'new-public-key': { type: 'string', arg: 'KEY', help: 'the new public key (0x-hex or z-multibase)' },
    },
    (ctx, o) => {
      const k = o['new-public-key'] ?? (o['new-key'] === undefined ? undefined : publicKeyOption({ 'public-key-file': o['new-key'] }, 'ed25519'));
      if (k === undefined || (o['new-key'] !== undefined && o['new-public-key'] !== undefined))
        throw new UsageError('give exactly one of --new-key and --new-public-key');
      return mutate(ctx, o, 'UpdateRootPubkey', { new_root_pubkey: k });
    },
  ),
});

const documentCmd = group(`${P} document`, 'replace the whole DID document', {
  replace: mutation(
    `${P} document replace`,
    'replace the document with a JSON file',
    '--file FILE',
    { file: { type: 'string', arg: 'FILE', help: 'the new document (JSON)', required: true } },
    (ctx, o) => {
      let document: DidDocumentJson;
      try {
        document = JSON.parse(readFileSync(o.file, 'utf8')) as DidDocumentJson;
      } catch (e) {
        throw new UsageError(`cannot read a JSON document from ${o.file}: ${messageOf(e)}`);
      }
      return mutate(ctx, o, 'replace_document', { document });
    },
  ),
});

/** `deactivate` and `delete`: the change, then the identity book marks the DID so that it is never picked again. */
function ending(action: 'deactivate_did' | 'delete_did', status: 'deactivated' | 'deleted') {
  return async (ctx: CommandContext, o: MutationArgs): Promise<Record<string, unknown>> => {
    const result = await mutate(ctx, o, action, {});
    const dir = await directoryContext(o, ctx.info);
    if (markIdentity(ctx.io.env, o.did, await dir.network(), status, new Date())) ctx.info(`marked ${o.did} ${status} in the identity book`);
    return result;
  };
}

/** Every mutation subcommand of `ddn did`. */
export const DID_MUTATIONS: Readonly<Record<string, CliCommand>> = {
  alias,
  'verification-method': verificationMethod,
  authentication,
  'key-agreement': keyAgreement,
  service: services,
  device,
  'root-key': rootKey,
  document: documentCmd,
  deactivate: mutation(`${P} deactivate`, 'deactivate the DID (permanent)', '', {}, ending('deactivate_did', 'deactivated')),
  delete: mutation(`${P} delete`, 'delete the DID record', '', {}, ending('delete_did', 'deleted')),
};
