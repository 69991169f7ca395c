/**
 * The DID document: SCALE struct, bounds and JSON form (ledger-rules.md §3.3), structure validation (§3.4).
 * Text fields are kept as JS strings; they travel as their UTF-8 bytes.
 */
import { utf8Length } from '../base/bytes.js';
import { type ScaleReader, ScaleWriter, decodeStrict } from '../codec/scale.js';
import { blake2_256 } from '../crypto/hash.js';
import type { RenderedDidDocumentJson, ServiceJson, VerificationMethodJson } from '../wire/json-forms.js';

export interface VerificationMethod {
  id: string;
  type: string;
  controller: string;
  publicKeyMultibase: string;
}
/** Key agreements have the same shape as verification methods. */
export type KeyAgreement = VerificationMethod;

export interface Service {
  id: string;
  type: string;
  serviceEndpoint: string[];
  authorization: string[] | null;
  priority: number | null;
}

export interface DidDocument {
  id: string;
  verificationMethod: VerificationMethod[];
  authentication: string[] | null;
  keyAgreement: KeyAgreement[];
  service: Service[] | null;
}

export const DOC = {
  maxIdBytes: 128,
  maxVms: 5,
  maxAuth: 4,
  maxKas: 5,
  maxServices: 4,
  maxFieldBytes: 64,
  maxKeyBytes: 128,
  maxEndpoints: 5,
  maxEndpointBytes: 128,
  maxAuthorization: 8,
  maxDocBlobBytes: 16_384,
} as const;

export function writeVm(w: ScaleWriter, vm: VerificationMethod): void {
  w.str(vm.id).str(vm.type).str(vm.controller).str(vm.publicKeyMultibase);
}

export function readVm(r: ScaleReader): VerificationMethod {
  return {
    id: r.str(DOC.maxFieldBytes),
    type: r.str(DOC.maxFieldBytes),
    controller: r.str(DOC.maxFieldBytes),
    publicKeyMultibase: r.str(DOC.maxKeyBytes),
  };
}

export function writeService(w: ScaleWriter, s: Service): void {
  w.str(s.id).str(s.type);
  w.vec(s.serviceEndpoint, (w2, e) => w2.str(e));
  w.option(s.authorization, (w2, a) => w2.vec(a, (w3, x) => w3.str(x)));
  w.option(s.priority, (w2, p) => w2.u32(p));
}

export function readService(r: ScaleReader): Service {
  return {
    id: r.str(DOC.maxFieldBytes),
    type: r.str(DOC.maxFieldBytes),
    serviceEndpoint: r.vec(DOC.maxEndpoints, (x) => x.str(DOC.maxEndpointBytes)),
    authorization: r.option((x) => x.vec(DOC.maxAuthorization, (y) => y.str(DOC.maxFieldBytes))),
    priority: r.option((x) => x.u32()),
  };
}

export function writeDocument(w: ScaleWriter, d: DidDocument): void {
  w.str(d.id);
  w.vec(d.verificationMethod, writeVm);
  w.option(d.authentication, (w2, a) => w2.vec(a, (w3, x) => w3.str(x)));
  w.vec(d.keyAgreement, writeVm);
  w.option(d.service, (w2, s) => w2.vec(s, writeService));
}

export function readDocument(r: ScaleReader): DidDocument {
  return {
    id: r.str(DOC.maxIdBytes),
    verificationMethod: r.vec(DOC.maxVms, readVm),
    authentication: r.option((x) => x.vec(DOC.maxAuth, (y) => y.str(DOC.maxFieldBytes))),
    keyAgreement: r.vec(DOC.maxKas, readVm),
    service: r.option((x) => x.vec(DOC.maxServices, readService)),
  };
}

export function encodeDocument(d: DidDocument): Uint8Array {
  const w = new ScaleWriter();
  writeDocument(w, d);
  return w.finish();
}

/** Strict decode of a `doc_blob` (throws ScaleDecodeError). */
export function decodeDocument(blob: Uint8Array): DidDocument {
  return decodeStrict(blob, readDocument, encodeDocument);
}

export function documentHash(d: DidDocument): Uint8Array {
  return blake2_256(encodeDocument(d));
}

export function emptyDocument(did: string): DidDocument {
  return { id: did, verificationMethod: [], authentication: null, keyAgreement: [], service: null };
}

/**
 * The JSON rendering (§3.3), typed by the wire's declaration (src/wire/json-forms.ts): all five keys, arrays always;
 * a service's endpoints always an array, `authorization`/`priority` only when Some.
 */
export function documentToJson(d: DidDocument): RenderedDidDocumentJson {
  return {
    id: d.id,
    verificationMethod: d.verificationMethod.map(vmToJson),
    authentication: d.authentication ? [...d.authentication] : [],
    keyAgreement: d.keyAgreement.map(vmToJson),
    service: (d.service ?? []).map(serviceToJson),
  };
}

export function vmToJson(vm: VerificationMethod): VerificationMethodJson {
  return { id: vm.id, type: vm.type, controller: vm.controller, publicKeyMultibase: vm.publicKeyMultibase };
}

export function serviceToJson(s: Service): ServiceJson {
  const o: ServiceJson = { id: s.id, type: s.type, serviceEndpoint: [...s.serviceEndpoint] };
  if (s.authorization) o.authorization = [...s.authorization];
  if (s.priority !== null) o.priority = s.priority;
  return o;
}

export type DocumentStructureError =
  | 'InvalidDocument'
  | 'VerificationMethodAlreadyExists'
  | 'VerificationMethodNotFound'
  | 'AuthenticationAlreadyExists'
  | 'KeyAgreementAlreadyExists'
  | 'ServiceAlreadyExists';

export function isValidVm(vm: VerificationMethod, did: string): boolean {
  return vm.id.length > 0 && vm.controller === did && vm.type.length > 0 && vm.publicKeyMultibase.length > 0;
}

export function isValidService(s: Service): boolean {
  return s.id.length > 0 && s.type.length > 0 && s.serviceEndpoint.length > 0 && (s.authorization ?? []).every((a) => a.length > 0);
}

/** Document structure validation for full-document writes (ledger-rules.md §3.4), in order. */
export function checkDocumentStructure(doc: DidDocument, did: string): DocumentStructureError | null {
  if (doc.id !== did) return 'InvalidDocument';
  const vms = doc.verificationMethod;
  for (let i = 0; i < vms.length; i++) {
    if (!isValidVm(vms[i]!, did)) return 'InvalidDocument';
    if (vms.slice(i + 1).some((v) => v.id === vms[i]!.id)) return 'VerificationMethodAlreadyExists';
  }
  const auth = doc.authentication ?? [];
  for (let i = 0; i < auth.length; i++) {
    if (!vms.some((v) => v.id === auth[i])) return 'VerificationMethodNotFound';
    if (auth.slice(i + 1).includes(auth[i]!)) return 'AuthenticationAlreadyExists';
  }
  const kas = doc.keyAgreement;
  for (let i = 0; i < kas.length; i++) {
    if (!isValidVm(kas[i]!, did)) return 'InvalidDocument';
    if (kas.slice(i + 1).some((v) => v.id === kas[i]!.id)) return 'KeyAgreementAlreadyExists';
  }
  const svcs = doc.service ?? [];
  for (let i = 0; i < svcs.length; i++) {
    if (!isValidService(svcs[i]!)) return 'InvalidDocument';
    if (svcs.slice(i + 1).some((s) => s.id === svcs[i]!.id)) return 'ServiceAlreadyExists';
  }
  return null;
}

/** Byte length helper used by JSON parsers to enforce the struct bounds. */
export function fitsBytes(s: string, max: number): boolean {
  return utf8Length(s) <= max;
}
