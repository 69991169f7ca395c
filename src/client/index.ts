/** The ddn TypeScript SDK: Directory client, wire types, payload building and key helpers. */
export { DirectoryClient } from './directory-client.js';
export type { DirectoryClientOptions, LocalSubmitOptions, PrepareOptions, PrepareRegistrationArgs, RegisterArgs } from './directory-client.js';
export { deadlineFetch, RequestFailedError, DEFAULT_ANSWER_TIMEOUT_MS, DEFAULT_CONNECT_TIMEOUT_MS } from './deadline-fetch.js';
export type { DeadlineOptions, RequestFailure } from './deadline-fetch.js';
export { DirectoryApiError, RETRYABLE_STATUSES, encodePath, isRetryableError, joinUrl, requestJson } from './http.js';
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
export { generateX25519KeyPair, type X25519KeyPair } from '../crypto/x25519.js';
export { RelayClient, RelayError, RELAY_RETRY_STATUSES } from './relay-client.js';
export type { RelayClientOptions, RelayPostOutcome } from './relay-client.js';
export { CacheClient, MAX_ACK_IDS, isoSeconds } from './cache-client.js';
export type { CacheClientOptions, CacheTarget } from './cache-client.js';
export { cacheTargetsFor } from './cache-targets.js';
export type { CacheTargetOptions } from './cache-targets.js';
export { sendFile } from './file-sender.js';
export type { FileSource, SendFileOptions, SendProgress, SendReport } from './file-sender.js';
export { FileReceiver } from './file-receiver.js';
export type { CacheReader, FileReceiverOptions, FileSink, FileWriter, ReceiveFailure, ReceiveProgress, ReceiveReport, ReceivedFile } from './file-receiver.js';
export { bytesSource, directorySink, fileSource } from './file-io.js';
export { directorySenderCheck } from './sender-check.js';
export { LiveReceiver, liveUrl } from './live-receiver.js';
export type { LiveReceiverOptions } from './live-receiver.js';
export { KeyFileError, generatePrivateKey, readEd25519KeyFile, readPrivateKeyFile, readX25519KeyFile, writePrivateKeyFile } from './key-files.js';
export type { KeyType } from './key-files.js';
export { PersonaClient } from './persona-client.js';
export type { PersonaIntent, PreparedPersona, Signer } from './persona-client.js';
export { PolicyClient } from './policy-client.js';
export type { PolicyV2Action, ScopeRef } from './policy-client.js';
export { ApplicationClient } from './application-client.js';
export type { ApplicationChange } from './application-client.js';
export {
  checkApplicationPayload,
  checkPersonaPayload,
  checkPolicyV2Payload,
  checkPolicyV3Payload,
  checkTransferAcceptance,
  preparedBytes,
} from './signed-checks.js';
export { TransferError, type TransferErrorCode } from '../protocol/transfer-error.js';
export type * from './transfer-types.js';
export { generateDid } from '../protocol/did.js';
export { makeProfile, PLATFORM, type Profile } from '../protocol/profile.js';
export type * from './types.js';
export { getResolver } from './did-resolver.js';
export type { DidResolverDriver, DidResolverOptions, DidResolverResult, ParsedDidLike } from './did-resolver.js';
