/**
 * Wire shapes of the Directory routes the SDK uses (http-api.md §2.4, §2.6, §3–§9): the TypeBox static types the
 * Directory builds its answers as and its OpenAPI document declares (src/wire/), so a shape change is a compile
 * error on both sides. The SDK does not validate read responses beyond JSON parsing.
 */
import type { PolicyV2SubmitResponse, PolicyV3SubmitResponse } from '../wire/policies.js';

/** The §2.6 JSON forms: documents as sent and as rendered, verification methods, key agreements, services. */
export type {
  DeliveryConstraintsJson,
  DeliveryPolicyJson,
  DidDocumentJson,
  PolicyScopeJson,
  RenderedDidDocumentJson,
  ServiceJson,
  VerificationMethodJson,
} from '../wire/json-forms.js';

/** A key agreement has the same JSON shape as a verification method. */
export type { VerificationMethodJson as KeyAgreementJson } from '../wire/json-forms.js';

/** A `u64` given by the caller: bigint, safe integer or decimal string. Sent as a decimal string. */
export type U64Input = bigint | number | string;

/** Directory reads (§3): the same types the Directory builds them as. */
export type {
  AliasResponse,
  BlockResponse,
  DidRecordResponse,
  LedgerErrorJson,
  NoncesResponse,
  PendingOperationJson,
  RegistrationStatusResponse,
  TransactionResponse,
} from '../wire/directory.js';

/** `GET /health` (§3.7). */
export type { HealthResponse } from '../wire/meta.js';

/** History pages (docs/explorer.md). */
export type { ApplicationHistoryResponse, DidHistoryResponse, HistoryEntryJson, PersonaHistoryResponse } from '../wire/history.js';

/** A nonce domain of the DID registry (§5.1 table). */
export type DidNonceDomain = 'alias_nonce' | 'document_nonce' | 'root_pubkey_nonce' | 'control_nonce';

/** Registration (§4) and mutations (§5): preparations and the 202 of a Directory change (§2.4). */
export type {
  MutationPrepareResponse,
  RegistrationPrepareResponse,
  RegistrationRequest,
  RegistrationSubmitResponse,
  SubmitResponse,
} from '../wire/directory-writes.js';

/** Personas (§7): the record, nonces, DNS challenges, preparations and the 202 of a persona write. */
export type {
  ChallengeResponse,
  ChallengeStatusResponse,
  ChallengeVerifyResponse,
  OperatorNonceResponse,
  PersonaNoncesResponse,
  PersonaPrepareResponse,
  PersonaRecordResponse,
  PersonaSubmitResponse,
} from '../wire/personas.js';

/** Delivery policies (§8): reads, preparations and writes. */
export type {
  DidPolicyV2Response,
  PersonaPolicyV2Response,
  PolicyV2PrepareResponse,
  PolicyV2SubmitResponse,
  PolicyV3NonceResponse,
  PolicyV3PrepareResponse,
  PolicyV3Response,
  PolicyV3SubmitResponse,
} from '../wire/policies.js';

/** 202 of a delivery-policy write (§8.2, §8.3); `did` carries the DID or persona on v2 routes. */
export type PolicySubmitResponse = PolicyV2SubmitResponse | PolicyV3SubmitResponse;

/** Applications (§9): reads, preparations and the 202 of a registration or authorization. */
export type {
  ApplicationAuthorizationPrepareResponse,
  ApplicationPolicyResponse,
  ApplicationRegistrationPrepareResponse,
  ApplicationResponse,
  ApplicationSubmitResponse,
} from '../wire/applications.js';
