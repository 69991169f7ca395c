/** The common tail of every DID change: prepare → local check → sign → submit, then wait for finality. */
import type { ActionFields, DidAction } from '../client/actions.js';
import { readEd25519KeyFile } from '../client/key-files.js';
import type { SubmitResponse } from '../client/types.js';
import type { CommandContext } from './command.js';
import { didUrl, DIRECTORY_OPTIONS, timeoutMs, WAIT_OPTIONS, type DirectoryContext, directoryContext } from './common.js';

/** Options of every DID mutation command. */
export const MUTATION_OPTIONS = {
  did: { type: 'string', arg: 'DID', help: 'the DID to change (or its alias in the identity book)', required: true, identity: 'did' },
  key: {
    type: 'string',
    arg: 'FILE',
    help: "Ed25519 private key file of the signer (default: the DID's root key in the identity book)",
    required: true,
    identity: 'key',
  },
  'signer-key-id': { type: 'string', arg: 'ID', help: "'root' or a verification-method id (fragment or full)", default: 'root' },
  ...DIRECTORY_OPTIONS,
  ...WAIT_OPTIONS,
} as const;

export interface MutationArgs {
  did: string;
  key: string;
  'signer-key-id'?: string;
  directory?: string;
  profile?: string;
  'no-wait': boolean;
  timeout?: string;
}

/** Waits for `submitted` unless `--no-wait`, and renders the result. */
export async function finish(
  ctx: CommandContext,
  dir: DirectoryContext,
  o: { 'no-wait': boolean; timeout?: string },
  submitted: SubmitResponse,
  extra: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  ctx.info(`accepted: ${submitted.tx_hash}`);
  const base = { ...extra, tx_hash: submitted.tx_hash, extrinsic: submitted.extrinsic };
  ctx.progress({ ...extra, tx_hash: submitted.tx_hash, status: 'accepted' });
  if (o['no-wait']) return { ...base, status: 'accepted' };
  ctx.info('waiting for finality…');
  const tx = await dir.client.waitForTransaction(submitted.tx_hash, { timeoutMs: timeoutMs(o.timeout) });
  ctx.info(`finalized in block ${tx.block_number}`);
  return { ...base, status: 'finalized', block_number: tx.block_number, block_hash: tx.block_hash };
}

/** Runs one DID action with the Directory's prepare route and the local payload check; `fieldsOf` may need the profile. */
export async function mutate<A extends DidAction>(
  ctx: CommandContext,
  o: MutationArgs,
  action: A,
  fieldsOf: ActionFields[A] | ((dir: DirectoryContext) => ActionFields[A]),
): Promise<Record<string, unknown>> {
  const dir = await directoryContext(o, ctx.info);
  const fields = typeof fieldsOf === 'function' ? fieldsOf(dir) : fieldsOf;
  const key = readEd25519KeyFile(o.key);
  const signer = didUrl(o.did, o['signer-key-id'] ?? 'root', true);
  ctx.info(`${action} on ${o.did}: preparing, checking and signing locally…`);
  const submitted = await dir.client.mutate(o.did, key, signer, action, fields);
  return finish(ctx, dir, o, submitted, { did: o.did, action, signer_key_id: signer, nonce_domain: submitted.nonce_domain, nonce: submitted.nonce });
}
