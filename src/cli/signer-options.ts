/** The signer options of persona, policy and application commands: a local key file and its key id. */
import { readEd25519KeyFile } from '../client/key-files.js';
import type { Signer } from '../client/persona-client.js';
import { didUrl } from './common.js';

export const SIGNER_OPTIONS = {
  key: {
    type: 'string',
    arg: 'FILE',
    help: 'Ed25519 private key file of the signer (default: the root key of the --operator, --control-did or DID --id in the identity book; required otherwise)',
    required: true,
    identity: 'key',
    keyOf: ['operator', 'control-did', 'id'],
  },
  'signer-key-id': { type: 'string', arg: 'ID', help: "'root' or a verification-method id (fragment or full)", default: 'root' },
} as const;

/** The signer of `--key` / `--signer-key-id`; a fragment is taken relative to `did`. */
export function signerOf(o: { key: string; 'signer-key-id'?: string }, did: string | undefined): Signer {
  const id = o['signer-key-id'] ?? 'root';
  return { key: readEd25519KeyFile(o.key), keyId: did === undefined || id === 'root' || id.startsWith('did:') ? id : didUrl(did, id) };
}
