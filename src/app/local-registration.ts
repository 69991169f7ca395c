/**
 * The node identity's registration in this node's own ledger: the {@link RegistrationDirectory} the registration
 * loop uses, served by calling the {@link DirectoryService} directly (no HTTP server, no socket). The steps are the
 * SDK's (prepare, check the prepared bytes, sign, submit), and each body is typed by the route's wire declaration
 * (src/wire/directory-writes.ts), so the ledger sees exactly what a remote client sends.
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
import type { MutationPrepareBody, MutationRequest, MutationSubmitBody, RegistrationPrepareBody, RegistrationSubmitBody } from '../wire/directory-writes.js';
import type { RegistrationDirectory, ServiceAction } from './node-registration.js';

/** The path parameters the submit route of `action` is called with: the DID, and a service's id when updating it. */
function pathParams(did: string, action: ServiceAction, request: MutationRequest): Record<string, string> {
  const pf = ACTIONS_BY_NAME.get(action)?.pathField;
  const id = request.service?.id;
  return pf === undefined || id === undefined ? { did } : { did, [pf.param]: id };
}

/** A {@link RegistrationDirectory} over `service`, this process's Directory (or a private one on its ledger). */
export function localRegistrationDirectory(service: DirectoryService, profile: Profile): RegistrationDirectory {
  return {
    registrationStatus: async (did) => service.registrationStatus(did),
    resolve: async (did) => service.resolve(did),
    async register(args: RegisterArgs) {
      const body: RegistrationPrepareBody = { did: args.did, root_pubkey: multibaseEd25519(args.key.publicKey, false), did_document: args.didDocument };
      const prepared = service.prepareRegistration(body);
      const bytes = checkPreparedRegistration(profile, prepared, { did: args.did, didDocument: args.didDocument, rootPubkey: args.key.publicKey });
      const submit: RegistrationSubmitBody = { ...prepared.request, signature: toBase64(args.key.sign(bytes)) };
      await service.submitRegistration(submit);
    },
    async mutate(did: string, key: Ed25519KeyPair, signerKeyId: string, action: ServiceAction, fields: ActionFields[ServiceAction]) {
      const body: MutationPrepareBody = { did, action, ...fields, signer_key_id: signerKeyId };
      const prepared = service.prepareMutation(did, body);
      const bytes = checkPreparedMutation(profile, prepared, { did, action, fields, signerKeyId }, key.publicKey);
      const submit: MutationSubmitBody = { ...prepared.request, signature: toBase64(key.sign(bytes)) };
      await service.submitMutation(ACTIONS_BY_NAME.get(action)!, pathParams(did, action, prepared.request), submit);
    },
  };
}
