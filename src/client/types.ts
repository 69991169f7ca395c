/**
 * Wire shapes of the Directory routes the SDK uses (http-api.md §2.4, §2.6, §3, §4, §5). Response types describe
 * what the server sends; the SDK does not validate read responses beyond JSON parsing.
 */
import type { LedgerErrorJson } from '../wire/directory.js';

/** A verification method or key agreement in JSON form (http-api.md §2.6, ledger-rules.md §3.3). */
export interface VerificationMethodJson {
  id: string;
  type: string;
  controller: string;
  publicKeyMultibase: string;
}

/** A key agreement has the same JSON shape as a verification method. */
export type KeyAgreementJson = VerificationMethodJson;

/** A service in JSON form (http-api.md §2.6). */
export interface ServiceJson {
  id: string;
  type: string;
  serviceEndpoint: string | string[];
  authorization?: string[] | null;
  priority?: number | null;
}

/** A DID document in JSON form; keys limited to these five (http-api.md §2.6). */
export interface DidDocumentJson {
  id: string;
  verificationMethod?: VerificationMethodJson[];
  authentication?: string[] | null;
  keyAgreement?: KeyAgreementJson[];
  service?: ServiceJson[] | null;
}

/** A document as the Directory renders it (ledger-rules.md §3.3): all five keys, arrays always. */
export interface RenderedDidDocumentJson {
  id: string;
  verificationMethod: VerificationMethodJson[];
  authentication: string[];
  keyAgreement: KeyAgreementJson[];
  service: ServiceJson[];
}

/** A `u64` given by the caller: bigint, safe integer or decimal string. Sent as a decimal string. */
export type U64Input = bigint | number | string;

/** `GET /resolve/{did}` (§3.1). */
export interface DidRecordResponse {
  did: string;
  owner: null;
  aliases: string[];
  devices: { deviceId: string; addedAt: number; tombstoned: boolean }[];
  version: number;
  document: RenderedDidDocumentJson | null;
  updatedAt: number;
  freshness: string;
  registration_status: string;
  root_pubkey: string;
  deactivated: boolean;
  tx_id?: string;
  document_nonce: string;
  pending_document_nonce?: string;
  pending_document_action: boolean;
  pending_document_action_name?: string;
  pending_extrinsic_hash?: string;
  pending_document_submitted_at?: string;
  pending_operations: { action: string; nonce_domain: string; nonce: string; tx_hash: string; submitted_at: string }[];
  block_number: number;
  block_hash: string;
}

/** Directory reads (§3.2–§3.6): the same types the Directory builds them as. */
export type {
  AliasResponse,
  LedgerErrorJson,
  NoncesResponse,
  RegistrationStatusResponse,
  TransactionResponse,
} from '../wire/directory.js';

/** A nonce domain of the DID registry (§5.1 table). */
export type DidNonceDomain = 'alias_nonce' | 'document_nonce' | 'root_pubkey_nonce' | 'control_nonce';

/** `GET /blocks/latest`, `GET /blocks/{number}` (§3.5). */
export interface BlockResponse {
  number: number;
  hash: string;
  parent_hash: string;
  timestamp: number;
  timestamp_iso: string;
  extrinsics_root: string;
  results_root: string;
  finalized: boolean;
  finalized_number: number;
  extrinsics: { tx_hash: string; extrinsic: string; success: boolean; error?: LedgerErrorJson }[];
}

/** `GET /health` (§3.7). */
export interface HealthResponse {
  status: 'ok';
  roles: string[];
  profile: string;
  chain_id: string;
  genesis_hash: string;
  head: { number: number; hash: string };
  finalized: { number: number; hash: string };
}

/** The `request` of a registration preparation (§4.1): exactly these keys. */
export interface RegistrationRequest {
  did: string;
  root_pubkey: string;
  did_document: DidDocumentJson;
  timestamp: string;
  alias?: string;
}

/** `POST /register-did/prepare` 200 (§4.1). */
export interface RegistrationPrepareResponse {
  request: RegistrationRequest;
  payload_to_sign: string;
  canonical_payload: string;
  document_hash: string;
  expiry_ms: string;
  extrinsic: string;
}

/** `POST /register-did` 202 (§4.2). */
export interface RegistrationSubmitResponse {
  status: 'accepted';
  did: string;
  registration_status: 'pending';
  extrinsic: string;
  tx_hash: string;
  tx_id: string;
  message: string;
  duplicate?: boolean;
}

/** The 202 body of a Directory change (§2.4). */
export interface SubmitResponse {
  status: 'accepted';
  tx_hash: string;
  tx_id: string;
  extrinsic: string;
  did?: string;
  action?: string;
  nonce_domain?: string;
  nonce?: string;
  duplicate?: boolean;
  message?: string;
}

/** 202 of a persona write (http-api.md §7.4–§7.7). */
export interface PersonaSubmitResponse extends SubmitResponse {
  persona: string;
  operation: 'Register' | 'Renew' | 'RegisterNamed' | 'Revoke' | 'RotateControllers' | 'Transfer';
  /** Absent on revocation. */
  operator_did?: string;
  /** Transfer only. */
  new_operator_did?: string;
}

/**
 * `GET /personas/{persona}` (http-api.md §7.1): one flat record for DNS and named personas. The canonical name is
 * `name`; there is no top-level `persona` key (a deployed client reads `persona`, when present, as the record).
 */
export interface PersonaRecordResponse {
  name: string;
  kind: 'dns' | 'named';
  dns_required: boolean;
  operator_did: string;
  controller_keys: string[];
  controller_threshold: number;
  delivery_constraints: Record<string, number> | null;
  dns_proof_hash: string | null;
  verified_at: number;
  verification_expires_at: number;
  revision: number;
  active: boolean;
  expired: boolean;
  deliverable: boolean;
  block_number: number;
  block_hash: string;
  pending_operations: { operation: string; action: string; nonce: string | null; tx_hash: string; submitted_at: string }[];
}

/** 202 of a delivery-policy write (http-api.md §8.2, §8.3); `did` carries the DID or persona on v2 routes. */
export interface PolicySubmitResponse extends SubmitResponse {
  operation: string;
  /** v3: the scope as the Directory renders it. */
  scope?: { type: string; id: string };
  operator_did?: string;
  /** SetPolicy only. */
  policy_id?: string;
  revision?: number;
}

/** 202 of an application registration or authorization (http-api.md §9). */
export interface ApplicationSubmitResponse extends SubmitResponse {
  application_id: string;
}
