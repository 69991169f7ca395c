/** `DocumentAuthorizationPayload` (ledger-rules.md §4.2). */
import { type ScaleReader, ScaleWriter, tryDecodeStrict } from '../../codec/scale.js';
import { readService, readVm, writeService, writeVm, type KeyAgreement, type Service, type VerificationMethod } from '../document.js';

export const DOCUMENT_ACTIONS = [
  'AddVerificationMethod',
  'UpdateVerificationMethod',
  'RemoveVerificationMethod',
  'AddAuthentication',
  'RemoveAuthentication',
  'AddKeyAgreement',
  'UpdateKeyAgreement',
  'RemoveKeyAgreement',
  'AddService',
  'UpdateService',
  'RemoveService',
] as const;
export type DocumentAction = (typeof DOCUMENT_ACTIONS)[number];

/** Which single payload field each action fills (§4.2 table). */
export function documentActionField(a: DocumentAction): 'verificationMethod' | 'keyAgreement' | 'service' | 'id' {
  switch (a) {
    case 'AddVerificationMethod':
    case 'UpdateVerificationMethod':
      return 'verificationMethod';
    case 'AddKeyAgreement':
    case 'UpdateKeyAgreement':
      return 'keyAgreement';
    case 'AddService':
    case 'UpdateService':
      return 'service';
    default:
      return 'id';
  }
}

export interface DocumentPatchPayload {
  did: string;
  action: DocumentAction;
  verificationMethod: VerificationMethod | null;
  keyAgreement: KeyAgreement | null;
  service: Service | null;
  id: string | null;
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

export function encodeDocumentPatchPayload(p: DocumentPatchPayload): Uint8Array {
  const w = new ScaleWriter();
  w.str(p.did).u8(DOCUMENT_ACTIONS.indexOf(p.action));
  w.option(p.verificationMethod, writeVm);
  w.option(p.keyAgreement, writeVm);
  w.option(p.service, writeService);
  w.option(p.id, (w2, s) => w2.str(s));
  return w.u64(p.nonce).u64(p.validUntil).str(p.signerKeyId).finish();
}

function read(r: ScaleReader): DocumentPatchPayload {
  return {
    did: r.str(128),
    action: DOCUMENT_ACTIONS[r.variant(DOCUMENT_ACTIONS.length)]!,
    verificationMethod: r.option(readVm),
    keyAgreement: r.option(readVm),
    service: r.option(readService),
    id: r.option((x) => x.str(64)),
    nonce: r.u64(),
    validUntil: r.u64(),
    signerKeyId: r.str(64),
  };
}

export function decodeDocumentPatchPayload(b: Uint8Array): DocumentPatchPayload | undefined {
  return tryDecodeStrict(b, read, encodeDocumentPatchPayload);
}
