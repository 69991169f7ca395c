/**
 * The DID mutation actions of http-api.md §5.1: their request fields, ledger call, nonce domain and submit
 * route (§5.2). Action names are matched exactly as the table spells them (mixed case).
 */
import {
  DID_ACTION_ROUTES,
  isDidAction as isSharedDidAction,
  submitPath,
  type DidActionRoute,
  type DidAction as SharedDidAction,
} from '../protocol/did-actions.js';
import type { HttpMethod } from './http.js';
import type { DidDocumentJson, KeyAgreementJson, ServiceJson, VerificationMethodJson } from './types.js';

/** The action fields of each action, as sent in the prepare request and the submit body (§5.1). */
export interface ActionFields {
  add_alias: { alias: string };
  update_alias: { old_alias: string; new_alias: string };
  remove_alias: { alias: string };
  add_device: { device_id: string };
  update_device: { device_id: string; new_device_id: string };
  remove_device: { device_id: string };
  tombstone_device: { device_id: string };
  deactivate_did: Record<string, never>;
  delete_did: Record<string, never>;
  /** Any §0.3 key form; requests carry it as `0x` + lowercase hex. */
  UpdateRootPubkey: { new_root_pubkey: string };
  AddVerificationMethod: { verification_method: VerificationMethodJson };
  UpdateVerificationMethod: { verification_method: VerificationMethodJson };
  RemoveVerificationMethod: { id: string };
  AddAuthentication: { id: string };
  RemoveAuthentication: { id: string };
  AddKeyAgreement: { key_agreement: KeyAgreementJson };
  UpdateKeyAgreement: { key_agreement: KeyAgreementJson };
  RemoveKeyAgreement: { id: string };
  AddService: { service: ServiceJson };
  UpdateService: { service: ServiceJson };
  RemoveService: { id: string };
  replace_document: { document: DidDocumentJson };
}

/** A DID registry action name of the §5.1 table. */
export type DidAction = keyof ActionFields & SharedDidAction;

/** Loosely typed action fields, as read back from a server's prepared `request`. */
export type FieldBag = Readonly<Record<string, unknown>>;

/** A field that is missing or has the wrong type. */
export class ActionFieldError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ActionFieldError';
  }
}

/** What the §5.1 table says about one action (the shared table of src/protocol/did-actions.ts). */
export type ActionSpec = DidActionRoute;

/** The §5.1 / §5.2 table, shared with the Directory. */
export const DID_ACTIONS: { readonly [A in DidAction]: DidActionRoute } = DID_ACTION_ROUTES;

/** True iff `s` is an action name of the §5.1 table (case-sensitive). */
export function isDidAction(s: unknown): s is DidAction {
  return isSharedDidAction(s);
}

/** The submit route (§5.2) of a request body: method and encoded path. */
export function submitRoute(did: string, action: DidAction, fields: FieldBag): { method: HttpMethod; path: string } {
  try {
    return { method: DID_ACTION_ROUTES[action].method, path: submitPath(action, did, fields) };
  } catch (e) {
    throw new ActionFieldError(e instanceof Error ? e.message : String(e));
  }
}
