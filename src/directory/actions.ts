/**
 * Server side of the DID mutation actions (http-api.md §5.1): the shared table and codec of
 * src/protocol/did-actions.ts, plus what only the Directory does — strict decoding of a submitted
 * `canonical_payload` and building the ledger extrinsic.
 */
import { ScaleReader } from '../codec/scale.js';
import type { Call, CallName } from '../ledger/extrinsic.js';
import type { NonceDomain } from '../ledger/records.js';
import { encodeDocument } from '../protocol/document.js';
import {
  DID_ACTION_ROUTES,
  encodeDidActionPayload,
  parseDidAction,
  type DidAction,
  type DidActionAuth,
  type DidActionOperand,
  type DidActionRoute,
} from '../protocol/did-actions.js';
import { decodeAliasPayload } from '../protocol/payloads/alias.js';
import { decodeControlPayload } from '../protocol/payloads/control.js';
import { decodeDocumentPatchPayload } from '../protocol/payloads/document-patch.js';
import { decodeRootKeyPayload } from '../protocol/payloads/root-key.js';
import type { Profile } from '../protocol/profile.js';
import { assertServiceIdsOfDid } from '../protocol/document-json.js';

type Body = Record<string, unknown>;

export type SignParams = DidActionAuth;

/** An action's fields, parsed and normalised, able to build its signed bytes and its extrinsic. */
export interface ParsedAction {
  /** The action fields as they appear in `request` (normalised). */
  request: Body;
  /** The exact bytes the signer signs. */
  payload(p: SignParams): Uint8Array;
  /** The extrinsic carrying `payload` and `signature`. */
  call(p: SignParams, payload: Uint8Array, signature: Uint8Array): Call;
}

export interface ActionSpec extends DidActionRoute {
  action: DidAction;
  extrinsic: CallName;
  nonceDomain: NonceDomain & DidActionRoute['nonceDomain'];
  /** True when `canonical_payload` strictly decodes as this action's payload type. */
  decodes(bytes: Uint8Array, profile: Profile): boolean;
  parse(body: Body, did: string, profile: Profile): ParsedAction;
}

/** Decodes `<p>:set_document:v2|` ‖ tuple strictly (prefix, field bounds, exact length). */
function replacementDecodes(b: Uint8Array, profile: Profile): boolean {
  const prefix = Buffer.from(profile.setDocumentPrefix, 'ascii');
  if (b.length < prefix.length || !Buffer.from(b.subarray(0, prefix.length)).equals(prefix)) return false;
  try {
    const r = new ScaleReader(b.subarray(prefix.length));
    r.str(128);
    r.raw(32);
    r.u64();
    r.u64();
    r.str(64);
    r.end();
    return true;
  } catch {
    return false;
  }
}

function decoderOf(op: DidActionRoute['payload']): (b: Uint8Array, profile: Profile) => boolean {
  switch (op) {
    case 'alias':
      return (b) => decodeAliasPayload(b) !== undefined;
    case 'control':
      return (b) => decodeControlPayload(b) !== undefined;
    case 'root':
      return (b) => decodeRootKeyPayload(b) !== undefined;
    case 'patch':
      return (b) => decodeDocumentPatchPayload(b) !== undefined;
    case 'replace':
      return replacementDecodes;
  }
}

/** The ledger call carrying an action (ledger-rules.md §2.4). */
function callOf(extrinsic: CallName, did: string, op: DidActionOperand, p: SignParams, payload: Uint8Array, signature: Uint8Array): Call {
  const proof = { signedPayload: payload, signature, signerKeyId: p.signerKeyId };
  switch (op.kind) {
    case 'alias':
      return op.action === 'Update'
        ? { name: 'update_alias', args: { did, oldAlias: op.oldAlias!, newAlias: op.newAlias!, ...proof } }
        : { name: op.action === 'Add' ? 'add_alias' : 'remove_alias', args: { did, alias: op.alias!, ...proof } };
    case 'control':
      return { name: 'apply_control_with_proof', args: proof };
    case 'root':
      return { name: 'update_root_pubkey', args: { did, newRootPubkey: op.newRootPubkey, ...proof } };
    case 'replace':
      return {
        name: 'set_document_with_proof_v2',
        args: { did, docBlob: encodeDocument(op.document), documentNonce: p.nonce, validUntil: p.validUntil, signerKeyId: p.signerKeyId, signature },
      };
    case 'patch': {
      const arg =
        op.verificationMethod !== null
          ? { method: op.verificationMethod }
          : op.keyAgreement !== null
            ? { keyAgreement: op.keyAgreement }
            : op.service !== null
              ? { service: op.service }
              : { [extrinsic === 'remove_key_agreement' ? 'keyId' : extrinsic === 'remove_service' ? 'serviceId' : 'methodId']: op.id! };
      return { name: extrinsic, args: { did, ...arg, ...proof } } as Call;
    }
  }
}

export const ACTIONS: readonly ActionSpec[] = (Object.keys(DID_ACTION_ROUTES) as DidAction[]).map((action) => {
  const route: DidActionRoute = DID_ACTION_ROUTES[action];
  const extrinsic = route.extrinsic as CallName;
  return {
    ...route,
    action,
    extrinsic,
    nonceDomain: route.nonceDomain,
    decodes: decoderOf(route.payload),
    parse: (body: Body, did: string, profile: Profile): ParsedAction => {
      const { operand, request } = parseDidAction(action, did, body);
      if (!profile.acceptsDeployedClientForms) {
        if (operand.kind === 'patch' && operand.service !== null) assertServiceIdsOfDid([operand.service], did, 'service');
        if (operand.kind === 'replace') assertServiceIdsOfDid(operand.document.service, did, 'document.service');
      }
      return {
        request,
        payload: (p) => encodeDidActionPayload(profile, did, operand, p),
        call: (p, payload, signature) => callOf(extrinsic, did, operand, p, payload, signature),
      };
    },
  };
});

export const ACTIONS_BY_NAME: ReadonlyMap<string, ActionSpec> = new Map(ACTIONS.map((a) => [a.action, a]));
