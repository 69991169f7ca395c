/** The ddn TypeScript SDK: Directory client, wire types, payload building and key helpers. */
export { DirectoryClient } from './directory-client.js';
export type {
  DirectoryClientOptions,
  LocalSubmitOptions,
  PrepareOptions,
  PrepareRegistrationArgs,
  RegisterArgs,
} from './directory-client.js';
export {
  DirectoryApiError,
  RETRYABLE_STATUSES,
  encodePath,
  isRetryableError,
  joinUrl,
  requestJson,
} from './http.js';
export type { ErrorBody, FetchInitLike, FetchLike, FetchResponseLike, HttpMethod, JsonResponse } from './http.js';
export { PayloadCheckError, RegistrationFailedError, TransactionFailedError, WaitTimeoutError } from './errors.js';
export { ActionFieldError, DID_ACTIONS, isDidAction, submitRoute } from './actions.js';
export type { ActionFields, ActionSpec, DidAction, FieldBag } from './actions.js';
export { buildMutationRequest, encodeActionPayload, normalizeActionFields, toU64 } from './payloads.js';
export type { BuildOptions, BuiltMutation, MutationRequest, PayloadAuth } from './payloads.js';
export { checkPreparedMutation, checkPreparedRegistration } from './verify-prepared.js';
export type { ExpectedMutation, ExpectedRegistration, PreparedMutation } from './verify-prepared.js';
export { pollUntil, realTiming } from './poll.js';
export type { PollTiming, WaitOptions } from './poll.js';
export { didDocumentFor, ed25519VerificationMethod, generateKeyPair, keyPairFromSeed, x25519KeyAgreement } from './keys.js';
export type { DidDocumentOptions, Ed25519KeyPair, GeneratedKeyPair } from './keys.js';
export { generateDid } from '../protocol/did.js';
export { makeProfile, PLATFORM, type Profile } from '../protocol/profile.js';
export type * from './types.js';
