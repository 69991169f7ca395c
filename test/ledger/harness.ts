/**
 * Test harness for the embedded ledger: a Ledger over SqliteLedgerStore on a temp file, a ManualClock, fixed-seed
 * keys, and builders that sign every DID-registry call the way a client would.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/base/clock.js';
import { keyPairFromSeed, type Ed25519KeyPair } from '../../src/crypto/ed25519.js';
import { blake2_256 } from '../../src/crypto/hash.js';
import { generateDid } from '../../src/protocol/did.js';
import { encodeDocument, type DidDocument, type Service, type VerificationMethod } from '../../src/protocol/document.js';
import { multibaseEd25519 } from '../../src/protocol/keys.js';
import { PLATFORM, type Profile } from '../../src/protocol/profile.js';
import { encodeAliasPayload } from '../../src/protocol/payloads/alias.js';
import { decodeControlPayload, encodeControlPayload, type ControlAction } from '../../src/protocol/payloads/control.js';
import { documentActionField, encodeDocumentPatchPayload, type DocumentPatchPayload } from '../../src/protocol/payloads/document-patch.js';
import { documentReplacementSigningBytes } from '../../src/protocol/payloads/document-replacement.js';
import { registrationSigningBytes } from '../../src/protocol/payloads/registration.js';
import { encodeRootKeyPayload } from '../../src/protocol/payloads/root-key.js';
import type { GenesisConfig } from '../../src/ledger/block.js';
import { Ledger } from '../../src/ledger/chain.js';
import type { LedgerOptions } from '../../src/ledger/types.js';
import { LedgerFailure } from '../../src/ledger/errors.js';
import type { Call, CallOf } from '../../src/ledger/extrinsic.js';
import { getDidRecord, getNonce, type DidRecord, type NonceDomain } from '../../src/ledger/records.js';
import { documentActionOfCall, type PatchCallName } from '../../src/ledger/runtime/did-registry.js';
import type { TxMeta } from '../../src/ledger/store.js';
import { openSqlite, type SqliteDb } from '../../src/store/sqlite/database.js';
import { LEDGER_MIGRATIONS, SqliteLedgerStore } from '../../src/store/sqlite/ledger-store.js';

export const T0 = 1_700_000_000_000;
/** Default authorization expiry used by the builders: one minute after T0. */
export const VALID_UNTIL = BigInt(T0 + 60_000);

export function seedKey(byte: number): Ed25519KeyPair {
  return keyPairFromSeed(new Uint8Array(32).fill(byte));
}

export const attestor = seedKey(9);

export function genesisConfig(p: Partial<GenesisConfig> = {}): GenesisConfig {
  return { profile: 'platform', chainId: 'ddn-test', genesisTimeMs: T0, personaAttestors: [attestor.publicKey], ...p };
}

/** A DID whose address is base58 of 16 bytes all equal to `n` (valid grammar). */
export function didOf(n: number): string {
  return generateDid(PLATFORM, new Uint8Array(16).fill(n));
}

export interface Signer {
  keyId: string;
  key: Ed25519KeyPair;
}

export const rootSigner = (key: Ed25519KeyPair): Signer => ({ keyId: 'root', key });

export function vmOf(did: string, frag: string, key: Ed25519KeyPair, p: Partial<VerificationMethod> = {}): VerificationMethod {
  return {
    id: `${did}#${frag}`,
    type: 'Ed25519VerificationKey2020',
    controller: did,
    publicKeyMultibase: multibaseEd25519(key.publicKey, false),
    ...p,
  };
}

export function serviceOf(did: string, frag: string, p: Partial<Service> = {}): Service {
  return {
    id: `${did}#${frag}`,
    type: 'PlatformCacheService',
    serviceEndpoint: ['https://cache.example.com'],
    authorization: null,
    priority: null,
    ...p,
  };
}

/** The V5-shaped document: VM `#root` with the key, authentication [#root], one cache service. */
export function defaultDocument(did: string, key: Ed25519KeyPair): DidDocument {
  return {
    id: did,
    verificationMethod: [vmOf(did, 'root', key)],
    authentication: [`${did}#root`],
    keyAgreement: [],
    service: [serviceOf(did, 'cache', { authorization: [`${did}#root`] })],
  };
}

export interface RegisterOptions {
  alias?: string | null;
  /** The alias as it goes into the signed bytes (defaults to the normalised alias). */
  signedAlias?: string | null;
  doc?: DidDocument;
  docBlob?: Uint8Array;
  expiryMs?: bigint;
  rootPubkey?: Uint8Array;
  signWith?: Ed25519KeyPair;
  signature?: Uint8Array;
  profile?: Profile;
}

export function registerCall(did: string, key: Ed25519KeyPair, o: RegisterOptions = {}): CallOf<'register_with_proof_v2'> {
  const alias = o.alias === undefined ? null : o.alias;
  const docBlob = o.docBlob ?? encodeDocument(o.doc ?? defaultDocument(did, key));
  const expiryMs = o.expiryMs ?? BigInt(T0 + 300_000);
  const rootPubkey = o.rootPubkey ?? key.publicKey;
  const signedAlias = o.signedAlias !== undefined ? o.signedAlias : alias === null ? null : alias.trim().toLowerCase();
  const msg = registrationSigningBytes(o.profile ?? PLATFORM, {
    did,
    rootPubkey,
    alias: signedAlias,
    documentHash: blake2_256(docBlob),
    expiryMs,
  });
  const signature = o.signature ?? (o.signWith ?? key).sign(msg);
  return { name: 'register_with_proof_v2', args: { did, alias, rootPubkey, expiryMs, docBlob, signature } };
}

export interface ProofOptions {
  nonce?: bigint;
  validUntil?: bigint;
  signer?: Signer;
  /** The signer_key_id put on the call (defaults to the payload's). */
  callSignerKeyId?: string;
  /** Overrides any payload field before signing. */
  payloadDid?: string;
  signature?: Uint8Array;
  signedPayload?: Uint8Array;
}

type AliasOp = { kind: 'add'; alias: string } | { kind: 'remove'; alias: string } | { kind: 'update'; oldAlias: string; newAlias: string };

/** Alias call; the payload carries `payloadAliases` (default: the call's aliases trimmed and lowercased). */
export function aliasCall(
  did: string,
  op: AliasOp,
  signer: Signer,
  o: ProofOptions & { payloadAliases?: { alias?: string | null; oldAlias?: string | null; newAlias?: string | null } } = {},
): Call {
  const n = (s: string) => s.trim().toLowerCase();
  const base = {
    alias: op.kind === 'update' ? null : n(op.alias),
    oldAlias: op.kind === 'update' ? n(op.oldAlias) : null,
    newAlias: op.kind === 'update' ? n(op.newAlias) : null,
    ...o.payloadAliases,
  };
  const payload =
    o.signedPayload ??
    encodeAliasPayload({
      did: o.payloadDid ?? did,
      action: op.kind === 'add' ? 'Add' : op.kind === 'update' ? 'Update' : 'Remove',
      alias: base.alias ?? null,
      oldAlias: base.oldAlias ?? null,
      newAlias: base.newAlias ?? null,
      nonce: o.nonce ?? 0n,
      validUntil: o.validUntil ?? VALID_UNTIL,
      signerKeyId: signer.keyId,
    });
  const proof = {
    signedPayload: payload,
    signature: o.signature ?? signer.key.sign(payload),
    signerKeyId: o.callSignerKeyId ?? signer.keyId,
  };
  if (op.kind === 'add') return { name: 'add_alias', args: { did, alias: op.alias, ...proof } };
  if (op.kind === 'remove') return { name: 'remove_alias', args: { did, alias: op.alias, ...proof } };
  return { name: 'update_alias', args: { did, oldAlias: op.oldAlias, newAlias: op.newAlias, ...proof } };
}

type PatchArg = VerificationMethod | Service | string;

/** Document patch call `name` with its one argument; the payload mirrors it unless `payloadField` overrides. */
export function patchCall(
  name: PatchCallName,
  did: string,
  arg: PatchArg,
  signer: Signer,
  o: ProofOptions & { payloadField?: PatchArg; payloadAction?: DocumentPatchPayload['action'] } = {},
): Call {
  const action = o.payloadAction ?? documentActionOfCall(name);
  const field = documentActionField(documentActionOfCall(name));
  const pf = o.payloadField ?? arg;
  const payload =
    o.signedPayload ??
    encodeDocumentPatchPayload({
      did: o.payloadDid ?? did,
      action,
      verificationMethod: field === 'verificationMethod' ? (pf as VerificationMethod) : null,
      keyAgreement: field === 'keyAgreement' ? (pf as VerificationMethod) : null,
      service: field === 'service' ? (pf as Service) : null,
      id: field === 'id' ? (pf as string) : null,
      nonce: o.nonce ?? 0n,
      validUntil: o.validUntil ?? VALID_UNTIL,
      signerKeyId: signer.keyId,
    });
  const proof = {
    signedPayload: payload,
    signature: o.signature ?? signer.key.sign(payload),
    signerKeyId: o.callSignerKeyId ?? signer.keyId,
  };
  const argKey: Record<PatchCallName, string> = {
    add_verification_method: 'method',
    update_verification_method: 'method',
    remove_verification_method: 'methodId',
    add_authentication: 'methodId',
    remove_authentication: 'methodId',
    add_key_agreement: 'keyAgreement',
    update_key_agreement: 'keyAgreement',
    remove_key_agreement: 'keyId',
    add_service: 'service',
    update_service: 'service',
    remove_service: 'serviceId',
  };
  return { name, args: { did, [argKey[name]]: arg, ...proof } } as unknown as Call;
}

export function rootKeyCall(did: string, newRootPubkey: Uint8Array, signer: Signer, o: ProofOptions & { payloadKey?: Uint8Array } = {}): Call {
  const payload =
    o.signedPayload ??
    encodeRootKeyPayload({
      did: o.payloadDid ?? did,
      newRootPubkey: o.payloadKey ?? newRootPubkey,
      nonce: o.nonce ?? 0n,
      validUntil: o.validUntil ?? VALID_UNTIL,
      signerKeyId: signer.keyId,
    });
  return {
    name: 'update_root_pubkey',
    args: {
      did,
      newRootPubkey,
      signedPayload: payload,
      signature: o.signature ?? signer.key.sign(payload),
      signerKeyId: o.callSignerKeyId ?? signer.keyId,
    },
  };
}

export function controlCall(did: string, action: ControlAction, signer: Signer, o: ProofOptions = {}): Call {
  const payload =
    o.signedPayload ??
    encodeControlPayload({
      did,
      action,
      nonce: o.nonce ?? 0n,
      validUntil: o.validUntil ?? VALID_UNTIL,
      signerKeyId: signer.keyId,
    });
  return {
    name: 'apply_control_with_proof',
    args: {
      signedPayload: payload,
      signature: o.signature ?? signer.key.sign(payload),
      signerKeyId: o.callSignerKeyId ?? signer.keyId,
    },
  };
}

export function replaceDocumentCall(did: string, doc: DidDocument | Uint8Array, signer: Signer, o: ProofOptions & { profile?: Profile } = {}): Call {
  const docBlob = doc instanceof Uint8Array ? doc : encodeDocument(doc);
  const documentNonce = o.nonce ?? 0n;
  const validUntil = o.validUntil ?? VALID_UNTIL;
  const msg = documentReplacementSigningBytes(o.profile ?? PLATFORM, {
    did,
    documentHash: blake2_256(docBlob),
    documentNonce,
    validUntil,
    signerKeyId: signer.keyId,
  });
  return {
    name: 'set_document_with_proof_v2',
    args: {
      did,
      docBlob,
      documentNonce,
      validUntil,
      signerKeyId: o.callSignerKeyId ?? signer.keyId,
      signature: o.signature ?? signer.key.sign(msg),
    },
  };
}

/** Pool metadata as the Directory would give it: the limit key is (DID, nonce domain). */
export function metaOf(call: Call): TxMeta {
  let subject: string;
  let domain: string;
  switch (call.name) {
    case 'add_alias':
    case 'update_alias':
    case 'remove_alias':
      subject = call.args.did;
      domain = 'alias_nonce';
      break;
    case 'update_root_pubkey':
      subject = call.args.did;
      domain = 'root_pubkey_nonce';
      break;
    case 'apply_control_with_proof':
      subject = decodeControlPayload(call.args.signedPayload)?.did ?? '?';
      domain = 'control_nonce';
      break;
    case 'register_with_proof_v2':
      subject = call.args.did;
      domain = 'registration';
      break;
    default:
      subject = (call.args as { did?: string }).did ?? '?';
      domain = 'document_nonce';
  }
  return { subject, action: call.name, nonceDomain: domain, limitKey: `${subject}|${domain}` };
}

export class Harness {
  readonly clock: ManualClock;
  ledger: Ledger;
  private db: SqliteDb;
  readonly path: string;
  private readonly dir: string;
  private readonly opts: Partial<LedgerOptions>;

  constructor(opts: Partial<LedgerOptions> = {}, clockMs = T0 + 1_000) {
    this.dir = mkdtempSync(join(tmpdir(), 'ddn-ledger-test-'));
    this.path = join(this.dir, 'ledger.sqlite');
    this.clock = new ManualClock(clockMs);
    this.opts = opts;
    this.db = openSqlite(this.path, LEDGER_MIGRATIONS, 'ledger');
    this.ledger = this.make();
  }

  private make(opts: Partial<LedgerOptions> = {}): Ledger {
    return new Ledger(new SqliteLedgerStore(this.db), {
      profile: PLATFORM,
      genesis: genesisConfig(),
      blockIntervalMs: 1000,
      finalityDepth: 0,
      clock: this.clock,
      autoProduce: false,
      ...this.opts,
      ...opts,
    });
  }

  /** Closes the database and opens the same file in a new Ledger (a process restart). */
  reopen(opts: Partial<LedgerOptions> = {}): Ledger {
    this.ledger.stop();
    this.db.close();
    this.db = openSqlite(this.path, LEDGER_MIGRATIONS, 'ledger');
    this.ledger = this.make(opts);
    return this.ledger;
  }

  close(): void {
    this.ledger.stop();
    this.db.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  submit(call: Call): string {
    const r = this.ledger.submit(call, metaOf(call));
    assert.equal(r.duplicate, false, 'unexpected duplicate');
    return r.txHash;
  }

  /** Submits and produces a block; asserts the call succeeded in it. */
  apply(call: Call): string {
    const h = this.submit(call);
    this.produce();
    const v = this.ledger.txView(h);
    assert.ok(v && (v.status === 'finalized' || v.status === 'in_block'), `tx ${call.name} not included: ${JSON.stringify(v?.tx.error)}`);
    return h;
  }

  produce() {
    const b = this.ledger.produceBlock();
    assert.ok(b, 'a block was produced');
    return b;
  }

  /** Registers `did` with `key` as root and VM `#root`, and produces the block. */
  register(did: string, key: Ed25519KeyPair, o: RegisterOptions = {}): string {
    return this.apply(registerCall(did, key, o));
  }

  record(did: string): DidRecord | undefined {
    return getDidRecord(this.ledger.finalizedView(), did);
  }

  /** Next usable nonce (pool state). */
  poolNonce(domain: NonceDomain, did: string): bigint {
    return getNonce(this.ledger.poolView(), domain, did);
  }

  headNonce(domain: NonceDomain, did: string): bigint {
    return getNonce(this.ledger.finalizedView(), domain, did);
  }
}

export function isFailure(name: string) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof LedgerFailure, `expected LedgerFailure(${name}), got ${String(e)}`);
    assert.equal(e.errorName, name);
    return true;
  };
}

/** Asserts the submission is rejected with `name` and nothing enters the pool. */
export function assertRejected(h: Harness, call: Call, name: string): void {
  const before = h.ledger.pendingEntries().length;
  assert.throws(() => h.ledger.submit(call, metaOf(call)), isFailure(name));
  assert.equal(h.ledger.pendingEntries().length, before, 'rejected submission left the pool unchanged');
  // check() runs the same path without keeping anything
  assert.equal(h.ledger.check(call)?.errorName, name, 'check() agrees');
}
