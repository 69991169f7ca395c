/**
 * Extrinsics (ledger-rules.md §2.4): `module_index u8 ‖ call_index u8 ‖ SCALE(arguments)`,
 * `tx_hash = blake2_256(extrinsic bytes)`. One typed table drives encoding and decoding.
 */
import { ScaleReader, ScaleWriter, ScaleDecodeError } from '../codec/scale.js';
import { blake2_256 } from '../crypto/hash.js';
import { LedgerFailure } from './errors.js';
import { readService, readVm, writeService, writeVm, type Service, type VerificationMethod } from '../protocol/document.js';

interface Codec<T> {
  write(w: ScaleWriter, v: T): void;
  read(r: ScaleReader): T;
}

const str = (max = Number.MAX_SAFE_INTEGER): Codec<string> => ({ write: (w, v) => w.str(v), read: (r) => r.str(max) });
const bin = (max = Number.MAX_SAFE_INTEGER): Codec<Uint8Array> => ({ write: (w, v) => w.bytes(v), read: (r) => r.bytes(max) });
const u64: Codec<bigint> = { write: (w, v) => w.u64(v), read: (r) => r.u64() };
/** A field-less enum (`ApplicationStatus`): one byte, index below the number of variants. */
const variant = (count: number): Codec<number> => ({ write: (w, v) => w.u8(v), read: (r) => r.variant(count) });
const bool: Codec<boolean> = { write: (w, v) => w.bool(v), read: (r) => r.bool() };
const vm: Codec<VerificationMethod> = { write: writeVm, read: readVm };
const service: Codec<Service> = { write: writeService, read: readService };
const optStr = (max = Number.MAX_SAFE_INTEGER): Codec<string | null> => ({
  write: (w, v) => w.option(v, (w2, s) => w2.str(s)),
  read: (r) => r.option((x) => x.str(max)),
});

interface Proof {
  signedPayload: Uint8Array;
  signature: Uint8Array;
  signerKeyId: string;
}

/** Arguments of every call, by ledger call name. */
export interface CallArgs {
  add_alias: { did: string; alias: string } & Proof;
  update_alias: { did: string; oldAlias: string; newAlias: string } & Proof;
  remove_alias: { did: string; alias: string } & Proof;
  add_verification_method: { did: string; method: VerificationMethod } & Proof;
  update_verification_method: { did: string; method: VerificationMethod } & Proof;
  remove_verification_method: { did: string; methodId: string } & Proof;
  add_authentication: { did: string; methodId: string } & Proof;
  remove_authentication: { did: string; methodId: string } & Proof;
  add_key_agreement: { did: string; keyAgreement: VerificationMethod } & Proof;
  update_key_agreement: { did: string; keyAgreement: VerificationMethod } & Proof;
  remove_key_agreement: { did: string; keyId: string } & Proof;
  add_service: { did: string; service: Service } & Proof;
  update_service: { did: string; service: Service } & Proof;
  remove_service: { did: string; serviceId: string } & Proof;
  update_root_pubkey: { did: string; newRootPubkey: Uint8Array } & Proof;
  apply_control_with_proof: Proof;
  register_with_proof_v2: {
    did: string;
    alias: string | null;
    rootPubkey: Uint8Array;
    expiryMs: bigint;
    docBlob: Uint8Array;
    signature: Uint8Array;
  };
  set_document_with_proof_v2: {
    did: string;
    docBlob: Uint8Array;
    documentNonce: bigint;
    validUntil: bigint;
    signerKeyId: string;
    signature: Uint8Array;
  };
  apply_policy_v2_with_proof: Proof;
  apply_persona_with_proof: Proof;
  apply_policy_v3_with_proof: Proof;
  register_application: { applicationId: string; controlDid: string; signerKeyId: string; signature: Uint8Array };
  update_application: { applicationId: string; newControlDid: string; signerKeyId: string; signature: Uint8Array };
  set_application_status: { applicationId: string; status: number; signerKeyId: string; signature: Uint8Array };
  set_application_domain: { applicationId: string; domain: string | null; signerKeyId: string; signature: Uint8Array };
  set_application_linked_did: {
    applicationId: string;
    linkedDid: string;
    enabled: boolean;
    controlSignerKeyId: string;
    controlSignature: Uint8Array;
    linkedSignerKeyId: string;
    linkedSignature: Uint8Array;
  };
}

export type CallName = keyof CallArgs;
export type Call = { [K in CallName]: { name: K; args: CallArgs[K] } }[CallName];
export type CallOf<K extends CallName> = { name: K; args: CallArgs[K] };

type Fields<T> = { [F in keyof T]: readonly [F, Codec<T[F]>] }[keyof T][];
interface Spec<T> {
  module: number;
  index: number;
  fields: Fields<T>;
}

const proof = [
  ['signedPayload', bin()],
  ['signature', bin()],
  ['signerKeyId', str()],
] as const;
const did = ['did', str()] as const;

const SPECS: { [K in CallName]: Spec<CallArgs[K]> } = {
  add_alias: { module: 8, index: 11, fields: [did, ['alias', str()], ...proof] },
  update_alias: { module: 8, index: 12, fields: [did, ['oldAlias', str()], ['newAlias', str()], ...proof] },
  remove_alias: { module: 8, index: 13, fields: [did, ['alias', str()], ...proof] },
  add_verification_method: { module: 8, index: 14, fields: [did, ['method', vm], ...proof] },
  update_verification_method: { module: 8, index: 15, fields: [did, ['method', vm], ...proof] },
  remove_verification_method: { module: 8, index: 16, fields: [did, ['methodId', str()], ...proof] },
  add_authentication: { module: 8, index: 17, fields: [did, ['methodId', str()], ...proof] },
  remove_authentication: { module: 8, index: 18, fields: [did, ['methodId', str()], ...proof] },
  add_key_agreement: { module: 8, index: 19, fields: [did, ['keyAgreement', vm], ...proof] },
  update_key_agreement: { module: 8, index: 20, fields: [did, ['keyAgreement', vm], ...proof] },
  remove_key_agreement: { module: 8, index: 21, fields: [did, ['keyId', str()], ...proof] },
  add_service: { module: 8, index: 22, fields: [did, ['service', service], ...proof] },
  update_service: { module: 8, index: 23, fields: [did, ['service', service], ...proof] },
  remove_service: { module: 8, index: 24, fields: [did, ['serviceId', str()], ...proof] },
  update_root_pubkey: { module: 8, index: 25, fields: [did, ['newRootPubkey', bin()], ...proof] },
  apply_control_with_proof: { module: 8, index: 29, fields: [...proof] },
  register_with_proof_v2: {
    module: 8,
    index: 30,
    fields: [did, ['alias', optStr()], ['rootPubkey', bin()], ['expiryMs', u64], ['docBlob', bin()], ['signature', bin()]],
  },
  set_document_with_proof_v2: {
    module: 8,
    index: 31,
    fields: [did, ['docBlob', bin()], ['documentNonce', u64], ['validUntil', u64], ['signerKeyId', str()], ['signature', bin()]],
  },
  apply_policy_v2_with_proof: { module: 9, index: 13, fields: [...proof] },
  apply_persona_with_proof: { module: 9, index: 15, fields: [...proof] },
  apply_policy_v3_with_proof: { module: 9, index: 17, fields: [...proof] },
  register_application: {
    module: 13,
    index: 0,
    fields: [
      ['applicationId', str(64)],
      ['controlDid', str(128)],
      ['signerKeyId', str(96)],
      ['signature', bin(128)],
    ],
  },
  update_application: {
    module: 13,
    index: 1,
    fields: [
      ['applicationId', str(64)],
      ['newControlDid', str(128)],
      ['signerKeyId', str(96)],
      ['signature', bin(128)],
    ],
  },
  set_application_status: {
    module: 13,
    index: 2,
    fields: [
      ['applicationId', str(64)],
      ['status', variant(3)],
      ['signerKeyId', str(96)],
      ['signature', bin(128)],
    ],
  },
  set_application_domain: {
    module: 13,
    index: 6,
    fields: [
      ['applicationId', str(64)],
      ['domain', optStr(253)],
      ['signerKeyId', str(96)],
      ['signature', bin(128)],
    ],
  },
  set_application_linked_did: {
    module: 13,
    index: 7,
    fields: [
      ['applicationId', str(64)],
      ['linkedDid', str(128)],
      ['enabled', bool],
      ['controlSignerKeyId', str(96)],
      ['controlSignature', bin(128)],
      ['linkedSignerKeyId', str(96)],
      ['linkedSignature', bin(128)],
    ],
  },
};

const BY_INDEX = new Map<number, CallName>((Object.keys(SPECS) as CallName[]).map((n) => [SPECS[n].module * 256 + SPECS[n].index, n]));

const MODULE_NAMES: Record<number, string> = { 8: 'DidRegistry', 9: 'DeliveryPolicy', 13: 'ApplicationRegistry' };

export function moduleOf(name: CallName): string {
  return MODULE_NAMES[SPECS[name].module]!;
}

export function encodeExtrinsic(call: Call): Uint8Array {
  const spec = SPECS[call.name] as unknown as Spec<Record<string, unknown>>;
  const w = new ScaleWriter().u8(spec.module).u8(spec.index);
  const args = call.args as Record<string, unknown>;
  for (const [field, codec] of spec.fields) codec.write(w, args[field as string]);
  return w.finish();
}

/** Decodes extrinsic bytes; undefined when they do not decode (→ `MalformedExtrinsic`). */
export function decodeExtrinsic(bytes: Uint8Array): Call | undefined {
  try {
    const r = new ScaleReader(bytes);
    const name = BY_INDEX.get(r.u8() * 256 + r.u8());
    if (!name) return undefined;
    const spec = SPECS[name] as unknown as Spec<Record<string, unknown>>;
    const args: Record<string, unknown> = {};
    for (const [field, codec] of spec.fields) args[field as string] = codec.read(r);
    r.end();
    return { name, args } as Call;
  } catch (e) {
    if (e instanceof ScaleDecodeError) return undefined;
    throw e;
  }
}

export function txHashOf(extrinsic: Uint8Array): Uint8Array {
  return blake2_256(extrinsic);
}

/**
 * The extrinsic bytes of `call` and the call decoded back from them (§2.4): an argument outside its bound, or one
 * that does not encode, is `MalformedExtrinsic` before any other check, and execution sees exactly the arguments
 * `tx_hash` covers (also after a restart, when pending calls are decoded from their stored bytes). `encoded`: the
 * call's bytes when already encoded.
 */
export function canonicalCall(call: Call, encoded?: Uint8Array): { bytes: Uint8Array; call: Call } {
  let bytes: Uint8Array;
  try {
    bytes = encoded ?? encodeExtrinsic(call);
  } catch {
    throw new LedgerFailure('MalformedExtrinsic', 'Ledger');
  }
  const decoded = decodeExtrinsic(bytes);
  if (!decoded) throw new LedgerFailure('MalformedExtrinsic', 'Ledger');
  return { bytes, call: decoded };
}
