/**
 * Persona DNS challenges (http-api.md §7.2, §7.3): creation bound to (persona, operator DID, action), reading,
 * and verification — the TXT lookup, `dns_proof_hash`, the attestation signed with the Directory's attestor key
 * (ledger-rules.md §4.9.2) and the payload to sign (register / renew) or the transfer acceptance payload (§4.9.3).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { to0x } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import type { Ed25519KeyPair } from '../crypto/ed25519.js';
import { getPersona, personaLiveness } from '../ledger/runtime/persona-state.js';
import { operatorNonce, personaNonce } from '../ledger/runtime/nonces.js';
import {
  dnsProofHash,
  ed25519MultiSignature,
  encodePersonaAttestationPayload,
  encodePersonaTransferAcceptancePayload,
  personaAttestationPayload,
  type PersonaOperation,
} from '../protocol/payloads/persona.js';
import { settle } from './deferred.js';
import type { ChallengeCreate, ChallengeVerify } from './challenge-requests.js';
import {
  CHALLENGE_RETENTION_MS,
  CHALLENGE_TTL_MS,
  challengeStatus,
  OPERATION_OF,
  type DnsChallenge,
  type DnsChallengeStore,
  type VerifiedIntent,
} from './dns-challenges.js';
import { checkTxtRecord, type TxtLookup } from './dns-verifier.js';
import { assertControllerSet, assertSignerInSet, challengeToJson, dnsPersonaOf, encodePersona, personaCall, verificationToJson } from './persona-fields.js';
import type { DirectoryDeps } from './deps.js';
import { activeDidRecord, dryRun, errorForLedgerName, NO_SIGNATURE, nonceMismatch, resolveSigner, validUntilAt } from './submission.js';
import type { ChallengeResponse, ChallengeStatusResponse, ChallengeVerifyResponse } from '../wire/personas.js';

const DAY_MS = 86_400_000;

/** Unpadded base64url of 32 random bytes (§7.2 token). */
function newToken(): string {
  return randomBytes(32).toString('base64url');
}

export class PersonaChallenges {
  constructor(
    private readonly deps: DirectoryDeps,
    private readonly store: DnsChallengeStore,
    private readonly lookup: TxtLookup,
  ) {}

  private get ledger() {
    return this.deps.ledger;
  }

  /**
   * The challenge `id` for `persona`, checked in §7.3 order: exists (404 `challenge_not_found`), not expired (410
   * `challenge_expired`), bound to this persona (403 `challenge_mismatch`). Whether a used challenge is an error is
   * the caller's decision (an identical pending resubmission is a duplicate, not a reuse).
   */
  async load(persona: string, id: unknown, nowMs: number): Promise<DnsChallenge> {
    const c = typeof id === 'string' && id.length > 0 && id.length <= 64 ? await this.store.get(id) : undefined;
    if (!c) throw new DdnError('challenge_not_found', 'unknown DNS challenge', { challenge_id: id ?? null });
    const status = challengeStatus(c, nowMs);
    if (status === 'expired') throw new DdnError('challenge_expired', 'the DNS challenge expired; request a new one', { challenge_id: c.id });
    if (c.persona !== persona) throw new DdnError('challenge_mismatch', 'the challenge is bound to another persona', { field: 'persona' });
    return c;
  }

  /** Marks the challenge used; false when it already was (the first use stays recorded). */
  markUsed(id: string, txHash: string): Promise<boolean> {
    return this.store.markUsed(id, txHash);
  }

  // ---------------------------------------------------------------- POST /personas/{p}/dns-challenges

  async create({ persona, operatorDid, action: a }: ChallengeCreate, directoryUrl: string | undefined): Promise<ChallengeResponse> {
    const pool = this.ledger.poolView();
    const now = this.deps.clock.nowMs();
    activeDidRecord(pool, operatorDid, 'operator_did');
    const rec = getPersona(pool, persona);
    let currentOperator: string | null = null;
    if (a === 'register_persona') {
      if (rec) throw new DdnError('persona_already_exists', 'the persona is registered or its registration is pending', { persona });
    } else if (a === 'renew_persona') {
      if (!rec) throw new DdnError('persona_not_found', 'persona not found', { persona });
      if (rec.named) throw new DdnError('persona_not_dns', 'a named persona has no DNS proof to renew', { persona });
      if (rec.operatorDid !== operatorDid) {
        throw new DdnError('invalid_persona_controller', 'operator_did is not the persona’s operator', { field: 'operator_did' });
      }
    } else {
      const live = personaLiveness(pool, now, persona);
      if (!live.ok) throw errorForLedgerName(live.error, { persona });
      if (live.record.operatorDid === operatorDid) {
        throw new DdnError('invalid_request', 'operator_did must be the new operator, not the current one', { field: 'operator_did' });
      }
      currentOperator = live.record.operatorDid;
    }
    const c: DnsChallenge = {
      id: randomUUID(),
      persona,
      operatorDid,
      action: a,
      challengeNonce: personaNonce(pool, persona).toString(),
      operatorNonce: operatorNonce(pool, currentOperator ?? operatorDid).toString(),
      currentOperatorDid: currentOperator,
      recordName: `${this.deps.profile.personaTxtPrefix}${persona}`,
      recordValue: `${this.deps.profile.personaTxtValuePrefix}${newToken()}`,
      createdAtMs: now,
      expiresAtMs: now + CHALLENGE_TTL_MS,
      status: 'pending',
      intent: null,
      usedTxHash: null,
    };
    await this.store.purgeExpiredBefore(now - CHALLENGE_RETENTION_MS);
    await this.store.insert(c);
    return challengeToJson(c, directoryUrl);
  }

  // ---------------------------------------------------------------- GET /personas/{p}/dns-challenges/{id}

  async get(rawPersona: string, id: string, directoryUrl: string | undefined): Promise<ChallengeStatusResponse> {
    const persona = dnsPersonaOf(rawPersona);
    const c = await this.store.get(id);
    if (!c || c.persona !== persona) throw new DdnError('challenge_not_found', 'unknown DNS challenge', { challenge_id: id });
    const status = challengeStatus(c, this.deps.clock.nowMs());
    return {
      ...challengeToJson(c, directoryUrl),
      status,
      ...(c.intent ? verificationToJson(c, c.intent) : {}),
      ...(c.usedTxHash === null ? {} : { tx_hash: c.usedTxHash }),
    };
  }

  // ---------------------------------------------------------------- POST …/{id}/verify

  async verify(req: ChallengeVerify): Promise<ChallengeVerifyResponse> {
    const { persona, id } = req;
    const c = await this.load(persona, id, this.deps.clock.nowMs());
    if (c.status === 'used') throw new DdnError('challenge_already_used', 'the challenge was already used', { challenge_id: c.id });
    if (settle(req.operatorDid) !== c.operatorDid) {
      throw new DdnError('challenge_mismatch', 'the challenge is bound to another operator', { field: 'operator_did' });
    }
    if (settle(req.action) !== c.action) throw new DdnError('challenge_mismatch', 'the challenge is bound to another action', { field: 'action' });

    this.checkIntent(c, req);
    if (!this.deps.attestor) throw new DdnError('service_unavailable', 'this Directory has no persona attestor key');
    const dns = await checkTxtRecord(this.lookup, c.recordName, c.recordValue);
    if (!dns.ok) {
      throw new DdnError('dns_verification_failed', `TXT record ${c.recordName}: ${dns.reason.replace(/_/g, ' ')}`, {
        reason: dns.reason,
        record_name: c.recordName,
        ...(dns.dnsError ? { dns_error: dns.dnsError } : {}),
      });
    }
    // The lookup awaited: the checks that read state run again on the state as it is now.
    const fresh = await this.load(persona, id, this.deps.clock.nowMs());
    if (fresh.status === 'used') throw new DdnError('challenge_already_used', 'the challenge was already used', { challenge_id: c.id });
    const checked = this.checkIntent(fresh, req);
    const verified = this.attest(fresh, checked, this.deps.attestor);
    if (!(await this.store.markVerified(fresh.id, verified))) {
      throw new DdnError('challenge_already_used', 'the challenge was already used', { challenge_id: c.id });
    }
    return verificationToJson(fresh, verified);
  }

  /** §7.3 checks from the nonces to the signer, against the pool state; returns the intent (without outputs). */
  private checkIntent(c: DnsChallenge, req: ChallengeVerify) {
    const pool = this.ledger.poolView();
    const now = this.deps.clock.nowMs();
    const personaNow = personaNonce(pool, c.persona);
    if (personaNow !== BigInt(c.challengeNonce)) {
      const e = nonceMismatch('persona_nonce', personaNow, BigInt(c.challengeNonce));
      throw new DdnError('nonce_mismatch', 'the persona nonce moved since the challenge was created; request a new challenge', e.details);
    }
    const nonce = settle(req.nonce);
    const nonceOwner = c.currentOperatorDid ?? c.operatorDid;
    const expected = operatorNonce(pool, nonceOwner);
    if (nonce !== expected) throw nonceMismatch('operator_nonce', expected, nonce);

    const { verificationDays, auth, constraints, threshold, controllerKeys: given } = settle(req.intent);
    const signerKeyId = auth.signerKeyId;
    const validUntil = validUntilAt(auth, now);
    let controllerKeys: string[];
    if (c.action === 'renew_persona') {
      const rec = getPersona(pool, c.persona);
      if (!rec) throw new DdnError('persona_not_found', 'persona not found', { persona: c.persona });
      controllerKeys = [...rec.controllerKeyIds];
      if (given !== undefined && (given.length !== controllerKeys.length || given.some((k, i) => k !== controllerKeys[i]))) {
        throw new DdnError('invalid_request', 'renewal keeps the controller set: omit controller_keys or repeat the stored set', {
          field: 'controller_keys',
        });
      }
      if (threshold !== 1) assertControllerSet(controllerKeys, threshold, 'controller_threshold');
    } else {
      controllerKeys = given ?? [signerKeyId];
      assertControllerSet(controllerKeys, threshold);
    }
    // Register / renew: a key of the operator; transfer: a key of the new operator (it signs the acceptance).
    const signerRec = activeDidRecord(pool, c.operatorDid, 'operator_did');
    resolveSigner(c.operatorDid, signerRec, signerKeyId);
    assertSignerInSet(controllerKeys, signerKeyId, c.action === 'renew_persona' ? 'current' : 'proposed');
    return { nonce, validUntil, signerKeyId, controllerKeys, controllerThreshold: threshold, constraints, verificationDays, now };
  }

  /** The Directory's outputs: proof hash, expiry, attestation, and the payload to sign (§7.3). */
  private attest(c: DnsChallenge, i: ReturnType<PersonaChallenges['checkIntent']>, attestor: Ed25519KeyPair): VerifiedIntent {
    const { profile } = this.deps;
    const proofHash = dnsProofHash(c.recordName, c.recordValue);
    const expiresAt = BigInt(i.now) + BigInt(i.verificationDays) * BigInt(DAY_MS);
    const challengeNonce = BigInt(c.challengeNonce);
    const genesisHash = this.ledger.genesisHash;
    const message = encodePersonaAttestationPayload(
      personaAttestationPayload(profile, {
        genesisHash,
        persona: c.persona,
        operatorDid: c.operatorDid,
        dnsProofHash: proofHash,
        challengeNonce,
        verificationExpiresAt: expiresAt,
      }),
    );
    const attestationSignature = ed25519MultiSignature(attestor.sign(message));
    const attestation = {
      dnsProofHash: proofHash,
      challengeNonce,
      verificationExpiresAt: expiresAt,
      attestor: attestor.publicKey,
      attestationSignature,
    };
    let canonicalPayload: string | null = null;
    let acceptancePayload: string | null = null;
    const kind = OPERATION_OF[c.action];
    if (kind === 'Transfer') {
      acceptancePayload = to0x(
        encodePersonaTransferAcceptancePayload({
          domain: profile.personaTransferDomain,
          genesisHash,
          persona: c.persona,
          currentOperatorDid: c.currentOperatorDid!,
          newOperatorDid: c.operatorDid,
          newControllerKeyIds: i.controllerKeys,
          newControllerThreshold: i.controllerThreshold,
          constraints: i.constraints,
          dnsProofHash: proofHash,
          challengeNonce,
          verificationExpiresAt: expiresAt,
          newOperatorSignerKeyId: i.signerKeyId,
        }),
      );
    } else {
      const operation: PersonaOperation =
        kind === 'Register'
          ? {
              kind,
              persona: c.persona,
              controllerKeyIds: i.controllerKeys,
              controllerThreshold: i.controllerThreshold,
              constraints: i.constraints,
              attestation,
            }
          : { kind, persona: c.persona, constraints: i.constraints, attestation };
      const payload = encodePersona(c.operatorDid, operation, i.nonce, i.validUntil, i.signerKeyId);
      dryRun(this.ledger, personaCall(payload, NO_SIGNATURE, i.signerKeyId), {
        expectedNonce: operatorNonce(this.ledger.poolView(), c.operatorDid),
        receivedNonce: i.nonce,
      });
      canonicalPayload = to0x(payload);
    }
    return {
      nonce: i.nonce.toString(),
      validUntil: i.validUntil.toString(),
      signerKeyId: i.signerKeyId,
      controllerKeys: i.controllerKeys,
      controllerThreshold: i.controllerThreshold,
      constraints: i.constraints,
      verificationDays: i.verificationDays,
      dnsProofHash: to0x(proofHash),
      verificationExpiresAt: Number(expiresAt),
      attestor: to0x(attestor.publicKey),
      attestationSignature: to0x(attestationSignature),
      canonicalPayload,
      acceptancePayload,
      verifiedAtMs: i.now,
    };
  }
}
