/**
 * The node identity's registration in this node's own ledger: the {@link RegistrationDirectory} the registration
 * loop uses, served by calling the {@link DirectoryService} directly (no HTTP server, no socket). The steps are the
 * SDK's (prepare, check the prepared bytes, sign, submit), so the ledger sees exactly what a remote client sends.
 */
import { toBase64 } from '../base/bytes.js';
import type { Ed25519KeyPair } from '../crypto/ed25519.js';
import type { ActionFields } from '../client/actions.js';
import type { RegisterArgs } from '../client/directory-client.js';
import { checkPreparedMutation, checkPreparedRegistration } from '../client/verify-prepared.js';
import { ACTIONS_BY_NAME } from '../directory/actions.js';
import type { DirectoryService } from '../directory/service.js';
import { multibaseEd25519 } from '../protocol/keys.js';
import type { Profile } from '../protocol/profile.js';
import type { RegistrationDirectory, ServiceAction } from './node-registration.js';

type Body = Record<string, unknown>;

/** The path parameters the submit route of `request.action` would have been called with. */
function pathParams(did: string, request: Body): Record<string, string> {
  const pf = ACTIONS_BY_NAME.get(String(request.action))?.pathField;
  if (pf === undefined) return { did };
  const outer = request[pf.field];
  const value = pf.sub === undefined ? outer : (outer as Body | undefined)?.[pf.sub];
  return { did, [pf.param]: String(value) };
}

/** A {@link RegistrationDirectory} over `service`, this process's Directory (or a private one on its ledger). */
export function localRegistrationDirectory(service: DirectoryService, profile: Profile): RegistrationDirectory {
  return {
    registrationStatus: async (did) => service.registrationStatus(did),
    resolve: async (did) => service.resolve(did),
    async register(args: RegisterArgs) {
      const rootPubkey = multibaseEd25519(args.key.publicKey, false);
      const prepared = service.prepareRegistration({ did: args.did, root_pubkey: rootPubkey, did_document: args.didDocument });
      const bytes = checkPreparedRegistration(profile, prepared, { did: args.did, didDocument: args.didDocument, rootPubkey: args.key.publicKey });
      await service.submitRegistration({ ...prepared.request, signature: toBase64(args.key.sign(bytes)) });
    },
    async mutate(did: string, key: Ed25519KeyPair, signerKeyId: string, action: ServiceAction, fields: ActionFields[ServiceAction]) {
      const prepared = service.prepareMutation(did, { did, action, ...fields, signer_key_id: signerKeyId });
      const bytes = checkPreparedMutation(profile, prepared, { did, action, fields, signerKeyId }, key.publicKey);
      const request: Body = prepared.request;
      await service.submitMutation(ACTIONS_BY_NAME.get(action)!, pathParams(did, request), { ...request, signature: toBase64(key.sign(bytes)) });
    },
  };
}
