/** `ddn app …`: applications (http-api.md §9). */
import { ApplicationClient, type ApplicationChange } from '../client/application-client.js';
import { group, leaf, UsageError, type OptionDefs } from './command.js';
import { directoryContext, DIRECTORY_OPTIONS, WAIT_OPTIONS } from './common.js';
import { finish } from './did-submit.js';
import type { CliCommand } from './io.js';
import { SIGNER_OPTIONS, signerOf } from './signer-options.js';

const P = 'ddn app';
const ID = ['APPLICATION_ID'] as const;
const CONTROL = { 'control-did': { type: 'string', arg: 'DID', help: 'the control DID (resolves a fragment --signer-key-id)' } } as const;
const WRITE = { ...CONTROL, ...SIGNER_OPTIONS, ...DIRECTORY_OPTIONS, ...WAIT_OPTIONS } as const;

async function apps(o: { directory?: string; profile?: string }) {
  const dir = await directoryContext(o);
  return { dir, client: new ApplicationClient(dir.client.baseUrl, dir.profile, dir.fetch) };
}

function read(name: string, summary: string, get: (c: ApplicationClient, id: string) => Promise<unknown>): CliCommand {
  return leaf(`${P} ${name}`, {
    summary,
    synopsis: 'APPLICATION_ID',
    options: DIRECTORY_OPTIONS,
    positionals: ID,
    requiredPositionals: 1,
    async run(_ctx, o, [id]) {
      return get((await apps(o)).client, id!);
    },
  });
}

/** An authorization command: `extra` options and how they make the change. */
function change<E extends OptionDefs>(
  name: string,
  summary: string,
  synopsis: string,
  extra: E,
  make: (o: Record<string, unknown>) => ApplicationChange,
): CliCommand {
  return leaf(`${P} ${name}`, {
    summary,
    synopsis: `APPLICATION_ID ${synopsis} --key FILE`.replace(/ +/g, ' '),
    options: { ...extra, ...WRITE },
    positionals: ID,
    requiredPositionals: 1,
    async run(ctx, o, [id]) {
      const values = o as Record<string, unknown>;
      const { dir, client } = await apps(values as { directory?: string });
      const c = make(values);
      const submitted = await client.authorize(id!, c, signerOf(o as { key: string; 'signer-key-id'?: string }, values['control-did'] as string | undefined));
      return finish(ctx, dir, values as { 'no-wait': boolean; timeout?: string }, submitted, { application_id: id, action: c.action });
    },
  });
}

const LINKED = {
  'linked-did': { type: 'string', arg: 'DID', help: 'the DID to link or unlink', required: true },
  'linked-key': { type: 'string', arg: 'FILE', help: 'Ed25519 key file of the linked DID (it signs too)', required: true },
  'linked-signer-key-id': { type: 'string', arg: 'ID', help: "key id of the linked DID ('root' or a verification method)", default: 'root' },
} as const;

function linked(o: Record<string, unknown>, action: 'link_did' | 'unlink_did'): ApplicationChange {
  const did = o['linked-did'] as string;
  return { action, linkedDid: did, linkedSigner: signerOf({ key: o['linked-key'] as string, 'signer-key-id': o['linked-signer-key-id'] as string }, did) };
}

const STATUSES = ['active', 'suspended', 'tombstoned'] as const;

const APP_COMMANDS: Record<string, CliCommand> = {
  show: read('show', 'print an application', (c, id) => c.read(id)),
  policy: read('policy', "print an application's policy", (c, id) => c.policy(id)),
  register: leaf(`${P} register`, {
    summary: 'register an application controlled by a DID',
    synopsis: 'APPLICATION_ID --control-did DID --key FILE',
    options: { 'control-did': { ...CONTROL['control-did'], required: true }, ...SIGNER_OPTIONS, ...DIRECTORY_OPTIONS, ...WAIT_OPTIONS },
    positionals: ID,
    requiredPositionals: 1,
    async run(ctx, o, [id]) {
      const { dir, client } = await apps(o);
      const submitted = await client.register(id!, { controlDid: o['control-did'], signer: signerOf(o, o['control-did']) });
      return finish(ctx, dir, o, submitted, { application_id: id, action: 'register', control_did: o['control-did'] });
    },
  }),
  'set-domain': change(
    'set-domain',
    'bind a domain the control DID holds as a DNS persona',
    '--domain DOMAIN',
    { domain: { type: 'string', arg: 'DOMAIN', help: 'the domain', required: true } },
    (o) => ({ action: 'set_domain', domain: o.domain as string }),
  ),
  'clear-domain': change('clear-domain', "remove the application's domain", '', {}, () => ({ action: 'clear_domain' })),
  'set-status': change(
    'set-status',
    'set the status: active, suspended or tombstoned (final)',
    '--status STATUS',
    { status: { type: 'string', arg: 'STATUS', help: 'active, suspended or tombstoned', required: true } },
    (o) => {
      const s = o.status as (typeof STATUSES)[number];
      if (!STATUSES.includes(s)) throw new UsageError('--status must be active, suspended or tombstoned');
      return { action: 'set_status', status: s };
    },
  ),
  'update-control': change(
    'update-control',
    'hand the application to another control DID',
    '--new-control-did DID',
    { 'new-control-did': { type: 'string', arg: 'DID', help: 'the new control DID', required: true } },
    (o) => ({ action: 'update_control', newControlDid: o['new-control-did'] as string }),
  ),
  'link-did': change('link-did', 'link a DID (both DIDs sign)', '--linked-did DID --linked-key FILE', LINKED, (o) => linked(o, 'link_did')),
  'unlink-did': change('unlink-did', 'unlink a DID (both DIDs sign)', '--linked-did DID --linked-key FILE', LINKED, (o) => linked(o, 'unlink_did')),
};

/** The `app` command. */
export const appCommand = group(P, 'applications: registration, domain, status, control DID, linked DIDs', APP_COMMANDS);
