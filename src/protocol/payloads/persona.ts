/**
 * Persona payloads (ledger-rules.md §4.9): the outer `PersonaAuthorizationPayload` signed by the operator DID,
 * and the two nested structs — `PersonaAttestationPayload` (§4.9.2, signed by the Directory attestor) and
 * `PersonaTransferAcceptancePayload` (§4.9.3, signed by the new operator DID).
 */
import { concatBytes, utf8 } from '../../base/bytes.js';
import { type ScaleReader, ScaleWriter, tryDecodeStrict } from '../../codec/scale.js';
import { blake2_256 } from '../../crypto/hash.js';
import { readRequestedConstraints, writeRequestedConstraints } from '../policy/codec.js';
import { POLICY_BOUNDS as B, type RequestedDeliveryConstraints } from '../policy/types.js';
import type { Profile } from '../profile.js';
import { encodeOperatorSigned, readOperatorSigned } from './operator-signed.js';

export const MAX_PERSONA_CONTROLLERS = 8;
const DOMAIN_BYTES = 64;

/** The attestation fields shared by `Register`, `Renew` and `Transfer` (contiguous in all three). */
export interface PersonaAttestationFields {
  dnsProofHash: Uint8Array;
  /** The persona (challenge) nonce. */
  challengeNonce: bigint;
  verificationExpiresAt: bigint;
  /** The attestor's 32-byte Ed25519 public key. */
  attestor: Uint8Array;
  /** SCALE `MultiSignature`: `00` ‖ 64-byte Ed25519 signature (65 bytes). */
  attestationSignature: Uint8Array;
}

export type PersonaOperation =
  | {
      kind: 'Register';
      persona: string;
      controllerKeyIds: string[];
      controllerThreshold: number;
      constraints: RequestedDeliveryConstraints | null;
      attestation: PersonaAttestationFields;
    }
  | {
      kind: 'Renew';
      persona: string;
      constraints: RequestedDeliveryConstraints | null;
      attestation: PersonaAttestationFields;
    }
  | { kind: 'Revoke'; persona: string }
  | { kind: 'RotateControllers'; persona: string; controllerKeyIds: string[]; controllerThreshold: number }
  | {
      kind: 'Transfer';
      persona: string;
      newOperatorDid: string;
      newControllerKeyIds: string[];
      newControllerThreshold: number;
      constraints: RequestedDeliveryConstraints | null;
      attestation: PersonaAttestationFields;
      newOperatorSignerKeyId: string;
      newOperatorSignature: Uint8Array;
    }
  | {
      kind: 'RegisterNamed';
      persona: string;
      controllerKeyIds: string[];
      controllerThreshold: number;
      constraints: RequestedDeliveryConstraints | null;
    };

export const PERSONA_OPERATION_KINDS = ['Register', 'Renew', 'Revoke', 'RotateControllers', 'Transfer', 'RegisterNamed'] as const;

export interface PersonaPayload {
  operatorDid: string;
  operation: PersonaOperation;
  /** The operator's `operator_nonce`. */
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

const writeKeys = (w: ScaleWriter, ids: string[]) => w.vec(ids, (x, s) => x.str(s));
const readKeys = (r: ScaleReader) => r.vec(MAX_PERSONA_CONTROLLERS, (x) => x.str(B.signerKeyIdBytes));
const writeConstraints = (w: ScaleWriter, c: RequestedDeliveryConstraints | null) => w.option(c, writeRequestedConstraints);
const readConstraints = (r: ScaleReader) => r.option(readRequestedConstraints);

function writeAttestation(w: ScaleWriter, a: PersonaAttestationFields): void {
  w.raw(a.dnsProofHash).u64(a.challengeNonce).u64(a.verificationExpiresAt).raw(a.attestor).bytes(a.attestationSignature);
}

function readAttestation(r: ScaleReader): PersonaAttestationFields {
  return {
    dnsProofHash: r.raw(32),
    challengeNonce: r.u64(),
    verificationExpiresAt: r.u64(),
    attestor: r.raw(32),
    attestationSignature: r.bytes(),
  };
}

function writeOperation(w: ScaleWriter, op: PersonaOperation): void {
  w.u8(PERSONA_OPERATION_KINDS.indexOf(op.kind)).str(op.persona);
  switch (op.kind) {
    case 'Register':
      writeKeys(w, op.controllerKeyIds).u8(op.controllerThreshold);
      writeConstraints(w, op.constraints);
      writeAttestation(w, op.attestation);
      break;
    case 'Renew':
      writeConstraints(w, op.constraints);
      writeAttestation(w, op.attestation);
      break;
    case 'Revoke':
      break;
    case 'RotateControllers':
      writeKeys(w, op.controllerKeyIds).u8(op.controllerThreshold);
      break;
    case 'Transfer':
      w.str(op.newOperatorDid);
      writeKeys(w, op.newControllerKeyIds).u8(op.newControllerThreshold);
      writeConstraints(w, op.constraints);
      writeAttestation(w, op.attestation);
      w.str(op.newOperatorSignerKeyId).bytes(op.newOperatorSignature);
      break;
    case 'RegisterNamed':
      writeKeys(w, op.controllerKeyIds).u8(op.controllerThreshold);
      writeConstraints(w, op.constraints);
      break;
  }
}

function readOperation(r: ScaleReader): PersonaOperation {
  const kind = PERSONA_OPERATION_KINDS[r.variant(PERSONA_OPERATION_KINDS.length)]!;
  const persona = r.str(B.personaBytes);
  switch (kind) {
    case 'Register':
      return {
        kind,
        persona,
        controllerKeyIds: readKeys(r),
        controllerThreshold: r.u8(),
        constraints: readConstraints(r),
        attestation: readAttestation(r),
      };
    case 'Renew':
      return { kind, persona, constraints: readConstraints(r), attestation: readAttestation(r) };
    case 'Revoke':
      return { kind, persona };
    case 'RotateControllers':
      return { kind, persona, controllerKeyIds: readKeys(r), controllerThreshold: r.u8() };
    case 'Transfer':
      return {
        kind,
        persona,
        newOperatorDid: r.str(B.didBytes),
        newControllerKeyIds: readKeys(r),
        newControllerThreshold: r.u8(),
        constraints: readConstraints(r),
        attestation: readAttestation(r),
        newOperatorSignerKeyId: r.str(B.signerKeyIdBytes),
        newOperatorSignature: r.bytes(),
      };
    case 'RegisterNamed':
      return { kind, persona, controllerKeyIds: readKeys(r), controllerThreshold: r.u8(), constraints: readConstraints(r) };
  }
}

export function encodePersonaPayload(p: PersonaPayload): Uint8Array {
  return encodeOperatorSigned(p, writeOperation);
}

const read = (r: ScaleReader): PersonaPayload => readOperatorSigned(r, readOperation);

/** Strict decode (§1.4); undefined on any failure (`InvalidPersonaPayload`). */
export function decodePersonaPayload(b: Uint8Array): PersonaPayload | undefined {
  return tryDecodeStrict(b, read, encodePersonaPayload);
}

// ---- §4.9.2 attestation ----

export interface PersonaAttestationPayload {
  /** `<p>:persona:dns:v1`. */
  domain: string;
  genesisHash: Uint8Array;
  persona: string;
  /** The attested operator (the new operator for `Transfer`). */
  operatorDid: string;
  dnsProofHash: Uint8Array;
  challengeNonce: bigint;
  verificationExpiresAt: bigint;
}

export function encodePersonaAttestationPayload(a: PersonaAttestationPayload): Uint8Array {
  return new ScaleWriter()
    .str(a.domain)
    .raw(a.genesisHash)
    .str(a.persona)
    .str(a.operatorDid)
    .raw(a.dnsProofHash)
    .u64(a.challengeNonce)
    .u64(a.verificationExpiresAt)
    .finish();
}

function readAttestationPayload(r: ScaleReader): PersonaAttestationPayload {
  return {
    domain: r.str(DOMAIN_BYTES),
    genesisHash: r.raw(32),
    persona: r.str(B.personaBytes),
    operatorDid: r.str(B.didBytes),
    dnsProofHash: r.raw(32),
    challengeNonce: r.u64(),
    verificationExpiresAt: r.u64(),
  };
}

export function decodePersonaAttestationPayload(b: Uint8Array): PersonaAttestationPayload | undefined {
  return tryDecodeStrict(b, readAttestationPayload, encodePersonaAttestationPayload);
}

/** The attestation struct of §4.9.2 for this profile. */
export function personaAttestationPayload(profile: Profile, a: Omit<PersonaAttestationPayload, 'domain'>): PersonaAttestationPayload {
  return { domain: profile.personaAttestationDomain, ...a };
}

/** SCALE `MultiSignature::Ed25519`: `00` ‖ the 64-byte signature. */
export function ed25519MultiSignature(signature: Uint8Array): Uint8Array {
  if (signature.length !== 64) throw new RangeError('an Ed25519 signature is 64 bytes');
  return concatBytes(Uint8Array.of(0), signature);
}

/** The 64-byte Ed25519 signature inside a `MultiSignature`, or undefined for any other variant or length. */
export function ed25519FromMultiSignature(multi: Uint8Array): Uint8Array | undefined {
  return multi.length === 65 && multi[0] === 0 ? multi.subarray(1) : undefined;
}

// ---- §4.9.3 transfer acceptance ----

export interface PersonaTransferAcceptancePayload {
  /** `<p>:persona:transfer:v1`. */
  domain: string;
  genesisHash: Uint8Array;
  persona: string;
  currentOperatorDid: string;
  newOperatorDid: string;
  newControllerKeyIds: string[];
  newControllerThreshold: number;
  constraints: RequestedDeliveryConstraints | null;
  dnsProofHash: Uint8Array;
  challengeNonce: bigint;
  verificationExpiresAt: bigint;
  newOperatorSignerKeyId: string;
}

export function encodePersonaTransferAcceptancePayload(a: PersonaTransferAcceptancePayload): Uint8Array {
  const w = new ScaleWriter().str(a.domain).raw(a.genesisHash).str(a.persona).str(a.currentOperatorDid).str(a.newOperatorDid);
  writeKeys(w, a.newControllerKeyIds).u8(a.newControllerThreshold);
  writeConstraints(w, a.constraints);
  return w.raw(a.dnsProofHash).u64(a.challengeNonce).u64(a.verificationExpiresAt).str(a.newOperatorSignerKeyId).finish();
}

function readAcceptance(r: ScaleReader): PersonaTransferAcceptancePayload {
  return {
    domain: r.str(DOMAIN_BYTES),
    genesisHash: r.raw(32),
    persona: r.str(B.personaBytes),
    currentOperatorDid: r.str(B.didBytes),
    newOperatorDid: r.str(B.didBytes),
    newControllerKeyIds: readKeys(r),
    newControllerThreshold: r.u8(),
    constraints: readConstraints(r),
    dnsProofHash: r.raw(32),
    challengeNonce: r.u64(),
    verificationExpiresAt: r.u64(),
    newOperatorSignerKeyId: r.str(B.signerKeyIdBytes),
  };
}

export function decodePersonaTransferAcceptancePayload(b: Uint8Array): PersonaTransferAcceptancePayload | undefined {
  return tryDecodeStrict(b, readAcceptance, encodePersonaTransferAcceptancePayload);
}

/**
 * Rebuilds the acceptance payload from a `Transfer` operation, the genesis hash and the outer payload's
 * `operator_did` (as `current_operator_did`), as the ledger does (§4.9.3).
 */
export function transferAcceptanceOf(
  profile: Profile,
  genesisHash: Uint8Array,
  currentOperatorDid: string,
  op: Extract<PersonaOperation, { kind: 'Transfer' }>,
): PersonaTransferAcceptancePayload {
  return {
    domain: profile.personaTransferDomain,
    genesisHash,
    persona: op.persona,
    currentOperatorDid,
    newOperatorDid: op.newOperatorDid,
    newControllerKeyIds: op.newControllerKeyIds,
    newControllerThreshold: op.newControllerThreshold,
    constraints: op.constraints,
    dnsProofHash: op.attestation.dnsProofHash,
    challengeNonce: op.attestation.challengeNonce,
    verificationExpiresAt: op.attestation.verificationExpiresAt,
    newOperatorSignerKeyId: op.newOperatorSignerKeyId,
  };
}

/** `dns_proof_hash` (ddn-defined, §4.9.2) = `blake2_256(UTF-8(record_name) ‖ 0x0A ‖ UTF-8(record_value))`. */
export function dnsProofHash(recordName: string, recordValue: string): Uint8Array {
  return blake2_256(concatBytes(utf8(recordName), Uint8Array.of(0x0a), utf8(recordValue)));
}
