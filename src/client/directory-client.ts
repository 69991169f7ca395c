/**
 * The Directory SDK (http-api.md §3–§5): reads, DID registration, DID mutations (prepared by the Directory or
 * built locally) and waiting for finality. Every payload is checked or built with the shared protocol codecs.
 */
import { toBase64, to0x } from '../base/bytes.js';
import type { Ed25519KeyPair } from '../crypto/ed25519.js';
import { multibaseEd25519 } from '../protocol/keys.js';
import { makeProfile, PLATFORM, type Profile } from '../protocol/profile.js';
import { DID_ACTIONS, submitRoute, type ActionFields, type DidAction } from './actions.js';
import { RegistrationFailedError, TransactionFailedError } from './errors.js';
import { encodePath, globalFetch, requestJson, type FetchLike, type HttpMethod } from './http.js';
import { buildMutationRequest, toU64, type BuildOptions, type BuiltMutation, type MutationRequest } from './payloads.js';
import { pollUntil, realTiming, type PollTiming, type WaitOptions } from './poll.js';
import type {
  AliasResponse,
  BlockResponse,
  DidDocumentJson,
  DidRecordResponse,
  HealthResponse,
  NoncesResponse,
  RegistrationPrepareResponse,
  RegistrationStatusResponse,
  RegistrationSubmitResponse,
  SubmitResponse,
  TransactionResponse,
  U64Input,
} from './types.js';
import type { DeliveryResolutionResponse } from './transfer-types.js';
import { checkPreparedMutation, checkPreparedRegistration, type ExpectedMutation, type PreparedMutation } from './verify-prepared.js';

/** Options of {@link DirectoryClient}. */
export interface DirectoryClientOptions {
  /** fetch implementation; default the global `fetch`. */
  fetch?: FetchLike;
  /** Network profile (or its `<p>` name) for the prefixed payloads; default `platform`. */
  profile?: Profile | string;
  /** Clock and sleep used for default `valid_until` and polling; default real time. */
  timing?: PollTiming;
  /** Validity given to locally built authorizations; default 300 000 ms (the Directory's prepare default). */
  validityMs?: number;
}

/** Options of a prepared mutation. */
export interface PrepareOptions {
  signerKeyId?: string;
  validUntil?: U64Input;
}

/** Options of a locally built submission; the nonce is read from `GET /dids/{did}/nonces` when absent. */
export interface LocalSubmitOptions {
  nonce?: U64Input;
  validUntil?: U64Input;
  signerKeyId?: string;
}

/** Registration arguments (http-api.md §4.1). */
export interface PrepareRegistrationArgs {
  did: string;
  /** Any §0.3 key form; deployed clients send `z` + base58 of the raw key. */
  rootPubkey: string;
  didDocument: DidDocumentJson;
  alias?: string;
  expiryMs?: U64Input;
}

/** {@link DirectoryClient.register} arguments: the key both supplies `root_pubkey` and signs. */
export interface RegisterArgs {
  did: string;
  key: Ed25519KeyPair;
  didDocument: DidDocumentJson;
  alias?: string;
  expiryMs?: U64Input;
}

/** A client of one Directory base URL. */
export class DirectoryClient {
  readonly baseUrl: string;
  readonly profile: Profile;
  private readonly fetchImpl: FetchLike;
  private readonly timing: PollTiming;
  private readonly validityMs: number;

  constructor(baseUrl: string, opts: DirectoryClientOptions = {}) {
    this.baseUrl = baseUrl;
    this.fetchImpl = opts.fetch ?? globalFetch;
    this.profile = typeof opts.profile === 'string' ? makeProfile(opts.profile) : (opts.profile ?? PLATFORM);
    this.timing = opts.timing ?? realTiming;
    this.validityMs = opts.validityMs ?? 300_000;
  }

  private async call<T>(method: HttpMethod, path: string, body?: unknown): Promise<T> {
    return (await requestJson<T>(this.baseUrl, method, path, body, this.fetchImpl)).body;
  }

  // ---- reads (§3) ----

  /** `GET /resolve/{did}`: the finalized DID record (425 `registration_pending` while only pending). */
  resolve(did: string): Promise<DidRecordResponse> {
    return this.call('GET', encodePath`/resolve/${did}`);
  }
  /** `GET /registration-status/{did}`. */
  registrationStatus(did: string): Promise<RegistrationStatusResponse> {
    return this.call('GET', encodePath`/registration-status/${did}`);
  }
  /** `GET /dids/{did}/nonces`: next usable nonces (decimal strings). */
  nonces(did: string): Promise<NoncesResponse> {
    return this.call('GET', encodePath`/dids/${did}/nonces`);
  }
  /** `GET /transactions/{tx_hash}`. */
  transaction(txHash: string): Promise<TransactionResponse> {
    return this.call('GET', encodePath`/transactions/${txHash}`);
  }
  /** `GET /blocks/latest`. */
  latestBlock(): Promise<BlockResponse> {
    return this.call('GET', '/blocks/latest');
  }
  /** `GET /blocks/{number}`. */
  block(n: number | bigint): Promise<BlockResponse> {
    return this.call('GET', encodePath`/blocks/${n}`);
  }
  /** `GET /aliases/{alias}`. */
  aliasLookup(alias: string): Promise<AliasResponse> {
    return this.call('GET', encodePath`/aliases/${alias}`);
  }
  /** `GET /health`. */
  health(): Promise<HealthResponse> {
    return this.call('GET', '/health');
  }
  /** `GET /delivery-resolution/{did}[?tag=…&persona=…]` (§6): the recipient's key agreement, policy and limits. */
  deliveryResolution(did: string, opts: { tag?: string; persona?: string } = {}): Promise<DeliveryResolutionResponse> {
    const query = new URLSearchParams();
    if (opts.tag !== undefined) query.set('tag', opts.tag);
    if (opts.persona !== undefined) query.set('persona', opts.persona);
    const qs = query.toString();
    return this.call('GET', encodePath`/delivery-resolution/${did}` + (qs === '' ? '' : `?${qs}`));
  }

  // ---- registration (§4) ----

  /** `POST /register-did/prepare`; `expiry_ms` is sent as a decimal string. */
  prepareRegistration(args: PrepareRegistrationArgs): Promise<RegistrationPrepareResponse> {
    const body: Record<string, unknown> = { did: args.did, root_pubkey: args.rootPubkey, did_document: args.didDocument };
    if (args.alias !== undefined) body.alias = args.alias;
    if (args.expiryMs !== undefined) body.expiry_ms = toU64(args.expiryMs, 'expiry_ms').toString();
    return this.call('POST', '/register-did/prepare', body);
  }

  /**
   * Prepare → check `payload_to_sign` against the locally rebuilt registration bytes → sign with `key` →
   * `POST /register-did` with the prepared `request` and a Base64 `signature`. Returns the 202 body.
   */
  async register(args: RegisterArgs): Promise<RegistrationSubmitResponse> {
    const rootPubkey = multibaseEd25519(args.key.publicKey, false);
    const prepared = await this.prepareRegistration({ ...args, rootPubkey });
    const bytes = checkPreparedRegistration(this.profile, prepared, { ...args, rootPubkey: args.key.publicKey });
    const body = { ...prepared.request, signature: toBase64(args.key.sign(bytes)) };
    return this.call('POST', '/register-did', body);
  }

  // ---- prepared mutations (§5.1, §5.2) ----

  /** `POST /dids/{did}/prepare` with `{did, action, <fields>, signer_key_id?, valid_until?}`. */
  prepare<A extends DidAction>(did: string, action: A, fields: ActionFields[A], opts: PrepareOptions = {}): Promise<PreparedMutation> {
    const body: Record<string, unknown> = { did, action, ...fields };
    if (opts.signerKeyId !== undefined) body.signer_key_id = opts.signerKeyId;
    if (opts.validUntil !== undefined) body.valid_until = toU64(opts.validUntil, 'valid_until').toString();
    return this.call('POST', encodePath`/dids/${did}/prepare`, body);
  }

  /**
   * Checks `prepared` (see `checkPreparedMutation`; also against `expected` when given), signs
   * `payload_to_sign` with `key`, and sends `{...prepared.request, signature}` to the §5.2 route of its action.
   */
  submitPrepared(prepared: PreparedMutation, key: Ed25519KeyPair, expected?: ExpectedMutation): Promise<SubmitResponse> {
    const bytes = checkPreparedMutation(this.profile, prepared, expected, key.publicKey);
    return this.send(prepared.request, key.sign(bytes));
  }

  /** Prepare → check against the fields asked for → sign → submit. Returns the 202 body. */
  async mutate<A extends DidAction>(
    did: string,
    key: Ed25519KeyPair,
    signerKeyId: string,
    action: A,
    fields: ActionFields[A],
    opts: { validUntil?: U64Input } = {},
  ): Promise<SubmitResponse> {
    const prepared = await this.prepare(did, action, fields, { signerKeyId, validUntil: opts.validUntil });
    return this.submitPrepared(prepared, key, { did, action, fields, signerKeyId, validUntil: opts.validUntil });
  }

  private send(request: MutationRequest, signature: Uint8Array): Promise<SubmitResponse> {
    const route = submitRoute(request.did, request.action, request);
    return this.call(route.method, route.path, { ...request, signature: toBase64(signature) });
  }

  // ---- local style (no prepare route) ----

  /** Builds the exact request body and canonical payload of `action` with the shared codecs (no I/O). */
  buildLocal<A extends DidAction>(did: string, action: A, fields: ActionFields[A], opts: BuildOptions): BuiltMutation {
    return buildMutationRequest(this.profile, did, action, fields, opts);
  }

  /**
   * Reads the nonce of the action's domain (unless given), builds the request locally, signs it with `key`
   * and sends it. `valid_until` defaults to now + `validityMs`, `signer_key_id` to `root`.
   */
  async submitLocal<A extends DidAction>(
    did: string,
    key: Ed25519KeyPair,
    action: A,
    fields: ActionFields[A],
    opts: LocalSubmitOptions = {},
  ): Promise<SubmitResponse> {
    const nonce = opts.nonce ?? (await this.nonces(did))[DID_ACTIONS[action].nonceDomain];
    const validUntil = opts.validUntil ?? this.timing.now() + this.validityMs;
    const built = this.buildLocal(did, action, fields, { nonce, validUntil, signerKeyId: opts.signerKeyId ?? 'root', pubkey: key.publicKey });
    return this.send(built.request, key.sign(built.payload));
  }

  // ---- waiting (§3.2, §3.4) ----

  /** Polls `GET /transactions/{tx_hash}` until `finalized`; throws `TransactionFailedError` on `failed`. */
  waitForTransaction(txHash: string, opts?: WaitOptions): Promise<TransactionResponse> {
    return pollUntil(
      `transaction ${txHash}`,
      () => this.transaction(txHash),
      (tx) => {
        if (tx.status === 'failed') throw new TransactionFailedError(tx);
        return tx.status === 'finalized';
      },
      opts,
      this.timing,
    );
  }

  /**
   * Polls `GET /registration-status/{did}` until `confirmed`; throws `RegistrationFailedError` when it reports
   * `missing` with a `last_error` (a `missing` without one keeps polling until the deadline).
   */
  waitForRegistration(did: string, opts?: WaitOptions): Promise<RegistrationStatusResponse> {
    return pollUntil(
      `registration of ${did}`,
      () => this.registrationStatus(did),
      (s) => {
        if (s.registration_status === 'missing' && s.last_error) throw new RegistrationFailedError(did, s.last_error);
        return s.registration_status === 'confirmed';
      },
      opts,
      this.timing,
    );
  }

  // ---- one method per action: prepare → check → sign → submit ----

  /** `add_alias`. */
  addAlias(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['add_alias']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'add_alias', args);
  }
  /** `update_alias`. */
  updateAlias(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['update_alias']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'update_alias', args);
  }
  /** `remove_alias`. */
  removeAlias(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['remove_alias']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'remove_alias', args);
  }
  /** `add_device`. */
  addDevice(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['add_device']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'add_device', args);
  }
  /** `update_device`. */
  updateDevice(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['update_device']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'update_device', args);
  }
  /** `remove_device`. */
  removeDevice(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['remove_device']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'remove_device', args);
  }
  /** `tombstone_device`. */
  tombstoneDevice(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['tombstone_device']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'tombstone_device', args);
  }
  /** `deactivate_did` (permanent). */
  deactivate(did: string, key: Ed25519KeyPair, signerKeyId: string): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'deactivate_did', {});
  }
  /** `delete_did`. */
  deleteDid(did: string, key: Ed25519KeyPair, signerKeyId: string): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'delete_did', {});
  }
  /** `UpdateRootPubkey`; a `Uint8Array` key is sent as `0x` + hex. */
  rotateRootKey(did: string, key: Ed25519KeyPair, signerKeyId: string, newPublicKey: Uint8Array | string): Promise<SubmitResponse> {
    const k = typeof newPublicKey === 'string' ? newPublicKey : to0x(newPublicKey);
    return this.mutate(did, key, signerKeyId, 'UpdateRootPubkey', { new_root_pubkey: k });
  }
  /** `AddVerificationMethod`. */
  addVerificationMethod(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['AddVerificationMethod']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'AddVerificationMethod', args);
  }
  /** `UpdateVerificationMethod`. */
  updateVerificationMethod(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['UpdateVerificationMethod']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'UpdateVerificationMethod', args);
  }
  /** `RemoveVerificationMethod`. */
  removeVerificationMethod(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['RemoveVerificationMethod']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'RemoveVerificationMethod', args);
  }
  /** `AddAuthentication`. */
  addAuthentication(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['AddAuthentication']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'AddAuthentication', args);
  }
  /** `RemoveAuthentication`. */
  removeAuthentication(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['RemoveAuthentication']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'RemoveAuthentication', args);
  }
  /** `AddKeyAgreement`. */
  addKeyAgreement(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['AddKeyAgreement']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'AddKeyAgreement', args);
  }
  /** `UpdateKeyAgreement`. */
  updateKeyAgreement(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['UpdateKeyAgreement']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'UpdateKeyAgreement', args);
  }
  /** `RemoveKeyAgreement`. */
  removeKeyAgreement(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['RemoveKeyAgreement']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'RemoveKeyAgreement', args);
  }
  /** `AddService`. */
  addService(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['AddService']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'AddService', args);
  }
  /** `UpdateService` (`service.id` selects the entry). */
  updateService(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['UpdateService']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'UpdateService', args);
  }
  /** `RemoveService`. */
  removeService(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['RemoveService']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'RemoveService', args);
  }
  /** `replace_document` (v2 full replacement). */
  replaceDocument(did: string, key: Ed25519KeyPair, signerKeyId: string, args: ActionFields['replace_document']): Promise<SubmitResponse> {
    return this.mutate(did, key, signerKeyId, 'replace_document', args);
  }
}
