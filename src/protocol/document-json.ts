/**
 * JSON → struct conversion of DID documents, verification methods, key agreements and services
 * (ledger-rules.md §3.3 mapping, http-api.md §2.6 bounds). Failures are `invalid_document` with a reason.
 */
import { utf8Length } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import { DOC, type DidDocument, type Service, type VerificationMethod } from './document.js';

function bad(reason: string, field: string, message?: string): never {
  throw new DdnError('invalid_document', message ?? `invalid ${field}: ${reason}`, { reason, field });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function text(v: unknown, field: string, maxBytes: number): string {
  if (typeof v !== 'string' || v.length === 0) bad('missing_or_empty', field);
  if (utf8Length(v) > maxBytes) bad('too_long', field);
  return v;
}

const VM_KEYS = ['id', 'type', 'controller', 'publicKeyMultibase'];

/** A verification method or key agreement: exactly the four keys, non-empty, bounded, controller = DID. */
export function parseVerificationMethod(v: unknown, did: string, field = 'verification_method'): VerificationMethod {
  if (!isObject(v)) bad('not_an_object', field);
  for (const k of Object.keys(v)) if (!VM_KEYS.includes(k)) bad('unsupported_key', `${field}.${k}`);
  const vm = {
    id: text(v.id, `${field}.id`, DOC.maxFieldBytes),
    type: text(v.type, `${field}.type`, DOC.maxFieldBytes),
    controller: text(v.controller, `${field}.controller`, DOC.maxFieldBytes),
    publicKeyMultibase: text(v.publicKeyMultibase, `${field}.publicKeyMultibase`, DOC.maxKeyBytes),
  };
  if (vm.controller !== did) bad('controller_mismatch', `${field}.controller`, 'controller must equal the DID');
  return vm;
}

const SERVICE_KEYS = ['id', 'type', 'serviceEndpoint', 'authorization', 'priority'];

/** A service object (id and type required, serviceEndpoint string or 1–5 strings, authorization ≤ 8, priority u32). */
export function parseService(v: unknown, field = 'service'): Service {
  if (!isObject(v)) bad('not_an_object', field);
  for (const k of Object.keys(v)) if (!SERVICE_KEYS.includes(k)) bad('unsupported_key', `${field}.${k}`);
  const id = text(v.id, `${field}.id`, DOC.maxFieldBytes);
  const type = text(v.type, `${field}.type`, DOC.maxFieldBytes);
  const ep = v.serviceEndpoint;
  let endpoints: string[];
  if (typeof ep === 'string') endpoints = [ep];
  else if (Array.isArray(ep)) endpoints = ep as string[];
  else return bad('missing_or_invalid', `${field}.serviceEndpoint`);
  if (endpoints.length < 1 || endpoints.length > DOC.maxEndpoints) bad('endpoint_count', `${field}.serviceEndpoint`);
  endpoints.forEach((e, i) => text(e, `${field}.serviceEndpoint[${i}]`, DOC.maxEndpointBytes));
  let authorization: string[] | null = null;
  if (v.authorization !== undefined && v.authorization !== null) {
    if (!Array.isArray(v.authorization)) bad('not_an_array', `${field}.authorization`);
    if (v.authorization.length > DOC.maxAuthorization) bad('too_many', `${field}.authorization`);
    authorization = v.authorization.map((a, i) => text(a, `${field}.authorization[${i}]`, DOC.maxFieldBytes));
  }
  let priority: number | null = null;
  if (v.priority !== undefined && v.priority !== null) {
    const p = v.priority;
    if (typeof p !== 'number' || !Number.isInteger(p) || p < 0 || p > 0xffffffff) bad('invalid_priority', `${field}.priority`);
    priority = p;
  }
  return { id, type, serviceEndpoint: [...endpoints], authorization, priority };
}

/**
 * Each service `id` is a complete DID URL of `did` itself, `<did>#<fragment>` (service-spec.md: "Complete DID URL
 * such as `<did>#relay`"): the rule of every profile but `openpayload`, whose deployed clients' ids are stored as
 * given. `invalid_document` with `reason: "service_id_not_did_url"` otherwise.
 */
export function assertServiceIdsOfDid(services: readonly Service[] | null, did: string, field: string): void {
  (services ?? []).forEach((s, i) => {
    if (!s.id.startsWith(`${did}#`) || s.id.length === did.length + 1) {
      bad('service_id_not_did_url', `${field}[${i}].id`, `service id must be a DID URL of ${did} (${did}#<fragment>)`);
    }
  });
}

function list(v: unknown, field: string, max: number): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) bad('not_an_array', field);
  if (v.length > max) bad('too_many', field);
  return v;
}

const DOC_KEYS = ['id', 'verificationMethod', 'authentication', 'keyAgreement', 'service'];

/** A whole document (`did_document` / `document`): `id` = DID, only the five keys, every bound enforced. */
export function parseDidDocument(v: unknown, did: string, field = 'did_document'): DidDocument {
  if (!isObject(v)) bad('not_an_object', field);
  for (const k of Object.keys(v)) if (!DOC_KEYS.includes(k)) bad('unsupported_key', `${field}.${k}`, `unsupported key ${k}`);
  if (typeof v.id !== 'string') bad('missing_id', `${field}.id`);
  if (v.id !== did) bad('id_mismatch', `${field}.id`, 'document id must equal the DID');
  const vms = list(v.verificationMethod, `${field}.verificationMethod`, DOC.maxVms).map((x, i) =>
    parseVerificationMethod(x, did, `${field}.verificationMethod[${i}]`),
  );
  const authRaw = list(v.authentication, `${field}.authentication`, DOC.maxAuth);
  const authentication = authRaw.length === 0 ? null : authRaw.map((a, i) => text(a, `${field}.authentication[${i}]`, DOC.maxFieldBytes));
  const kas = list(v.keyAgreement, `${field}.keyAgreement`, DOC.maxKas).map((x, i) => parseVerificationMethod(x, did, `${field}.keyAgreement[${i}]`));
  const svcRaw = list(v.service, `${field}.service`, DOC.maxServices);
  const service = svcRaw.length === 0 ? null : svcRaw.map((s, i) => parseService(s, `${field}.service[${i}]`));
  return { id: did, verificationMethod: vms, authentication, keyAgreement: kas, service };
}
