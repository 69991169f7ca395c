/**
 * Personas (ledger-rules.md §5.9, §8): `apply_persona_with_proof` — DNS personas in the attestor model, named
 * personas, renewal, revocation, staged controller rotation and transfer. Persona nonces are keyed by the
 * canonical name; operator nonces by the operator DID.
 */
import { bytesEqual, utf8Length } from '../../base/bytes.js';
import { verifyEd25519 } from '../../crypto/ed25519.js';
import {
  decodePersonaPayload,
  ed25519FromMultiSignature,
  encodePersonaAttestationPayload,
  encodePersonaTransferAcceptancePayload,
  personaAttestationPayload,
  transferAcceptanceOf,
  type PersonaAttestationFields,
  type PersonaOperation,
} from '../../protocol/payloads/persona.js';
import { canonicalPersona } from '../../protocol/persona-name.js';
import { POLICY_BOUNDS as B } from '../../protocol/policy/types.js';
import type { Profile } from '../../protocol/profile.js';
import { failer } from '../errors.js';
import type { CallOf } from '../extrinsic.js';
import { bumpNonce, didExists, getNonce } from '../records.js';
import type { Overlay, StateReader } from '../state.js';
import { validatedConstraints } from './constraints.js';
import type { ExecContext } from './context.js';
import { getPersona, isValidControllerSet, personaLiveness, putPersona, type PersonaRecord } from './persona-state.js';
import { deletePolicyV2, deletePolicyV3 } from './policy-state.js';
import { verifyDidSignature, verifySignature } from './signatures.js';

const fail = failer('DeliveryPolicy');

/**
 * The attestor's signature of §4.9.2 and what it signs: `attestationSignature` is `00` ‖ 64-byte Ed25519 signature
 * over the `PersonaAttestationPayload` built from these values; undefined when it is not, or `attestor` is no key.
 */
function signedAttestation(
  profile: Profile,
  genesisHash: Uint8Array,
  persona: string,
  operatorDid: string,
  a: PersonaAttestationFields,
): { message: Uint8Array; signature: Uint8Array } | undefined {
  const signature = ed25519FromMultiSignature(a.attestationSignature);
  if (!signature || a.attestor.length !== 32) return undefined;
  const message = encodePersonaAttestationPayload(
    personaAttestationPayload(profile, {
      genesisHash,
      persona,
      operatorDid,
      dnsProofHash: a.dnsProofHash,
      challengeNonce: a.challengeNonce,
      verificationExpiresAt: a.verificationExpiresAt,
    }),
  );
  return { message, signature };
}

/** The attestor's signature check of §4.9.2, verified with `attestor`. */
export function isValidPersonaAttestation(
  profile: Profile,
  genesisHash: Uint8Array,
  persona: string,
  operatorDid: string,
  a: PersonaAttestationFields,
): boolean {
  const signed = signedAttestation(profile, genesisHash, persona, operatorDid, a);
  return signed !== undefined && verifyEd25519(a.attestor, signed.message, signed.signature);
}

/** `verify_attestation` (§8.3), in order. */
function verifyAttestation(s: StateReader, ctx: ExecContext, persona: string, operatorDid: string, a: PersonaAttestationFields): void {
  if (a.challengeNonce !== getNonce(s, 'persona_nonce', persona)) fail('InvalidPersonaNonce');
  if (!(a.verificationExpiresAt > BigInt(ctx.nowMs))) fail('PersonaVerificationExpired');
  if (!ctx.attestors.some((k) => bytesEqual(k, a.attestor))) fail('PersonaAttestorNotApproved');
  const signed = signedAttestation(ctx.profile, ctx.genesisHash, persona, operatorDid, a);
  // through the entry's record of valid signatures, as a DID's: the block that includes it finds the admission's verdict
  if (!signed || !verifySignature(ctx, a.attestor, signed.message, signed.signature)) fail('InvalidPersonaAttestation');
}

/** Signer gate (§5.9 step 7). */
function checkSigner(s: StateReader, operatorDid: string, signerKeyId: string, op: PersonaOperation): void {
  switch (op.kind) {
    case 'Register':
    case 'RegisterNamed':
      if (op.controllerThreshold !== 1 || !op.controllerKeyIds.includes(signerKeyId)) fail('InvalidPersonaController');
      return;
    case 'Renew':
    case 'Revoke':
    case 'Transfer':
    case 'RotateControllers': {
      const rec = getPersona(s, op.persona) ?? fail('PersonaNotFound');
      if (rec.operatorDid !== operatorDid || rec.controllerThreshold !== 1 || !rec.controllerKeyIds.includes(signerKeyId)) {
        fail('InvalidPersonaController');
      }
      if (op.kind === 'RotateControllers' && !op.controllerKeyIds.includes(signerKeyId)) fail('InvalidPersonaController');
      return;
    }
  }
}

export function executePersona(s: Overlay, ctx: ExecContext, call: CallOf<'apply_persona_with_proof'>): void {
  const a = call.args;
  if (utf8Length(a.signerKeyId) > B.signerKeyIdBytes) fail('InvalidPersonaPayload');
  const p = decodePersonaPayload(a.signedPayload) ?? fail('InvalidPersonaPayload');
  if (p.signerKeyId !== a.signerKeyId) fail('InvalidPersonaPayload');
  if (!(p.validUntil > BigInt(ctx.nowMs))) fail('PolicyAuthorizationExpired');
  if (!didExists(s, p.operatorDid)) fail('DidNotFound');
  if (p.nonce !== getNonce(s, 'operator_nonce', p.operatorDid)) fail('InvalidPersonaOperatorNonce');
  checkSigner(s, p.operatorDid, p.signerKeyId, p.operation);
  if (!verifyDidSignature(ctx, s, p.operatorDid, a.signerKeyId, a.signedPayload, a.signature)) fail('InvalidSignature');
  applyPersonaOperation(s, ctx, p.operatorDid, p.operation);
  bumpNonce(s, 'operator_nonce', p.operatorDid, p.nonce);
}

const isCanonical = (p: string) => canonicalPersona(p) === p;

/** The apply step (§8.5). */
// eslint-disable-next-line max-lines-per-function -- a table: one case per persona operation of §8.5, side by side
function applyPersonaOperation(s: Overlay, ctx: ExecContext, operatorDid: string, op: PersonaOperation): void {
  const p = op.persona;
  switch (op.kind) {
    case 'Register': {
      if (!p.includes('.') || !isCanonical(p)) fail('InvalidPersona');
      if (getPersona(s, p)) fail('PersonaAlreadyExists');
      if (!isValidControllerSet(op.controllerKeyIds, op.controllerThreshold)) fail('InvalidPersonaController');
      const constraints = op.constraints ? validatedConstraints(op.constraints) : null;
      verifyAttestation(s, ctx, p, operatorDid, op.attestation);
      putPersona(s, p, {
        operatorDid,
        controllerKeyIds: op.controllerKeyIds,
        controllerThreshold: op.controllerThreshold,
        deliveryConstraints: constraints,
        dnsProofHash: op.attestation.dnsProofHash,
        verifiedAt: ctx.nowMs,
        verificationExpiresAt: Number(op.attestation.verificationExpiresAt),
        revision: 1,
        active: true,
        named: false,
      });
      bumpNonce(s, 'persona_nonce', p, op.attestation.challengeNonce);
      return;
    }
    case 'RegisterNamed': {
      if (p.includes('.') || !isCanonical(p)) fail('InvalidPersona');
      if (getPersona(s, p)) fail('PersonaAlreadyExists');
      if (!isValidControllerSet(op.controllerKeyIds, op.controllerThreshold)) fail('InvalidPersonaController');
      putPersona(s, p, {
        operatorDid,
        controllerKeyIds: op.controllerKeyIds,
        controllerThreshold: op.controllerThreshold,
        deliveryConstraints: op.constraints ? validatedConstraints(op.constraints) : null,
        dnsProofHash: new Uint8Array(32),
        verifiedAt: 0,
        verificationExpiresAt: 0,
        revision: 1,
        active: true,
        named: true,
      });
      return;
    }
    case 'Renew': {
      const existing = getPersona(s, p);
      if (existing?.named) fail('InvalidPersona');
      if (!isCanonical(p)) fail('InvalidPersona');
      const rec = existing ?? fail('PersonaNotFound');
      if (rec.operatorDid !== operatorDid) fail('InvalidPersonaController');
      verifyAttestation(s, ctx, p, operatorDid, op.attestation);
      putPersona(s, p, {
        ...rec,
        deliveryConstraints: op.constraints ? validatedConstraints(op.constraints) : rec.deliveryConstraints,
        dnsProofHash: op.attestation.dnsProofHash,
        verifiedAt: ctx.nowMs,
        verificationExpiresAt: Number(op.attestation.verificationExpiresAt),
        revision: rec.revision + 1,
        active: true,
      });
      bumpNonce(s, 'persona_nonce', p, op.attestation.challengeNonce);
      return;
    }
    case 'Revoke': {
      const rec = getPersona(s, p) ?? fail('PersonaNotFound');
      if (!rec.active) fail('PersonaInactive');
      if (rec.operatorDid !== operatorDid) fail('InvalidPersonaController');
      putPersona(s, p, { ...rec, active: false, revision: rec.revision + 1 });
      return;
    }
    case 'RotateControllers': {
      if (!isValidControllerSet(op.controllerKeyIds, op.controllerThreshold)) fail('InvalidPersonaController');
      const rec = getPersona(s, p) ?? fail('PersonaNotFound');
      if (!rec.active) fail('PersonaInactive');
      if (rec.operatorDid !== operatorDid) fail('InvalidPersonaController');
      putPersona(s, p, {
        ...rec,
        controllerKeyIds: op.controllerKeyIds,
        controllerThreshold: op.controllerThreshold,
        revision: rec.revision + 1,
      });
      return;
    }
    case 'Transfer':
      return applyTransfer(s, ctx, operatorDid, op);
  }
}

function applyTransfer(s: Overlay, ctx: ExecContext, operatorDid: string, op: Extract<PersonaOperation, { kind: 'Transfer' }>): void {
  const p = op.persona;
  const live = personaLiveness(s, ctx.nowMs, p);
  if (!live.ok) return fail(live.error);
  const rec: PersonaRecord = live.record;
  if (rec.operatorDid !== operatorDid || op.newOperatorDid === operatorDid || !didExists(s, op.newOperatorDid)) {
    fail('InvalidPersonaController');
  }
  if (!isValidControllerSet(op.newControllerKeyIds, op.newControllerThreshold)) fail('InvalidPersonaController');
  if (!op.newControllerKeyIds.includes(op.newOperatorSignerKeyId)) fail('InvalidPersonaController');
  const constraints = op.constraints ? validatedConstraints(op.constraints) : null;
  verifyAttestation(s, ctx, p, op.newOperatorDid, op.attestation);
  const acceptance = encodePersonaTransferAcceptancePayload(transferAcceptanceOf(ctx.profile, ctx.genesisHash, operatorDid, op));
  if (!verifyDidSignature(ctx, s, op.newOperatorDid, op.newOperatorSignerKeyId, acceptance, op.newOperatorSignature)) {
    fail('InvalidSignature');
  }
  putPersona(s, p, {
    operatorDid: op.newOperatorDid,
    controllerKeyIds: op.newControllerKeyIds,
    controllerThreshold: op.newControllerThreshold,
    deliveryConstraints: constraints,
    dnsProofHash: op.attestation.dnsProofHash,
    verifiedAt: ctx.nowMs,
    verificationExpiresAt: Number(op.attestation.verificationExpiresAt),
    revision: rec.revision + 1,
    active: true,
    named: rec.named,
  });
  bumpNonce(s, 'persona_nonce', p, op.attestation.challengeNonce);
  const scope = { kind: 'Persona', id: p } as const;
  deletePolicyV2(s, scope);
  deletePolicyV3(s, scope);
}
