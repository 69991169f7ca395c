/**
 * The persona SDK (http-api.md §7): reads, DNS challenges, DNS and named registration, renewal, revocation,
 * controller rotation and the two-signature transfer. Each write is prepared (or verified) by the Directory,
 * checked locally (signed-checks.ts), signed with the caller's key and submitted.
 */
import { toBase64 } from '../base/bytes.js';
import type { Ed25519KeyPair } from '../crypto/ed25519.js';
import { DirectoryApi } from './directory-api.js';
import { encodePath } from './http.js';
import { checkPersonaPayload, checkTransferAcceptance, preparedBytes, type PreparedBytes } from './signed-checks.js';
import type {
  ChallengeResponse,
  ChallengeStatusResponse,
  OperatorNonceResponse,
  PersonaNoncesResponse,
  PersonaRecordResponse,
  PersonaSubmitResponse,
} from './types.js';

type Json = Record<string, unknown>;

/** A prepared (or verified) persona change: the signing fields and the body to submit. */
export interface PreparedPersona extends PreparedBytes {
  request: Json;
  acceptance_payload?: string;
  [key: string]: unknown;
}

/** A key that signs, and which verification method it is. */
export interface Signer {
  key: Ed25519KeyPair;
  keyId: string;
}

/** Fields of a DNS registration, renewal or transfer intent (§7.3). */
export interface PersonaIntent {
  controllerKeys?: string[];
  verificationDays?: number;
  deliveryConstraints?: Json;
}

export class PersonaClient extends DirectoryApi {
  /** `GET /personas/{persona}`: the flat record, its canonical name in `name`. */
  read(persona: string): Promise<PersonaRecordResponse> {
    return this.call('GET', encodePath`/personas/${persona}`);
  }
  /** `GET /personas/{persona}/nonces`. */
  nonces(persona: string): Promise<PersonaNoncesResponse> {
    return this.call('GET', encodePath`/personas/${persona}/nonces`);
  }
  /** `GET /persona-operators/{did}/nonce`. */
  operatorNonce(did: string): Promise<OperatorNonceResponse> {
    return this.call('GET', encodePath`/persona-operators/${did}/nonce`);
  }
  /** `POST /personas/{persona}/dns-challenges`: the TXT record to publish. */
  createChallenge(persona: string, operatorDid: string, action: ChallengeResponse['action']): Promise<ChallengeResponse> {
    return this.call('POST', encodePath`/personas/${persona}/dns-challenges`, { operator_did: operatorDid, action });
  }
  /** `GET /personas/{persona}/dns-challenges/{id}`. */
  challenge(persona: string, challengeId: string): Promise<ChallengeStatusResponse> {
    return this.call('GET', encodePath`/personas/${persona}/dns-challenges/${challengeId}`);
  }

  /** `POST …/verify` with the intent; `nonce` is the current nonce of the operator that will sign the submission. */
  private async verify(
    persona: string,
    challengeId: string,
    operatorDid: string,
    action: string,
    signer: Signer,
    intent: PersonaIntent,
  ): Promise<PreparedPersona> {
    const ch = await this.challenge(persona, challengeId);
    const nonceOf = typeof ch.current_operator_did === 'string' ? ch.current_operator_did : operatorDid;
    const { operator_nonce } = await this.operatorNonce(nonceOf);
    const body: Json = { operator_did: operatorDid, action, challenge_id: challengeId, nonce: operator_nonce, signer_key_id: signer.keyId };
    if (intent.controllerKeys !== undefined) Object.assign(body, { controller_keys: intent.controllerKeys, controller_threshold: 1 });
    if (intent.verificationDays !== undefined) body.verification_days = intent.verificationDays;
    if (intent.deliveryConstraints !== undefined) body.delivery_constraints = intent.deliveryConstraints;
    return this.call('POST', encodePath`/personas/${persona}/dns-challenges/${challengeId}/verify`, body);
  }

  private signed(prepared: PreparedPersona, signer: Signer): Json {
    return { ...prepared.request, signature: toBase64(signer.key.sign(preparedBytes(prepared))) };
  }

  /** DNS registration or renewal (§7.3, §7.4): verify the published TXT record, check, sign, `PUT /personas/{persona}`. */
  async registerDns(
    persona: string,
    a: { challengeId: string; operatorDid: string; renew?: boolean; signer: Signer } & PersonaIntent,
  ): Promise<PersonaSubmitResponse> {
    const action = a.renew ? 'renew_persona' : 'register_persona';
    const prepared = await this.verify(persona, a.challengeId, a.operatorDid, action, a.signer, a);
    checkPersonaPayload(preparedBytes(prepared), {
      persona,
      kind: a.renew ? 'Renew' : 'Register',
      operatorDid: a.operatorDid,
      signerKeyId: a.signer.keyId,
      controllerKeyIds: a.renew ? undefined : a.controllerKeys,
    });
    return this.call('PUT', encodePath`/personas/${persona}`, this.signed(prepared, a.signer));
  }

  /** Named persona (§7.5): prepare, check, sign, `PUT /personas/{persona}/named`. */
  async registerNamed(
    persona: string,
    a: { operatorDid: string; signer: Signer; controllerKeys: string[]; deliveryConstraints?: Json },
  ): Promise<PersonaSubmitResponse> {
    const body: Json = {
      operator_did: a.operatorDid,
      persona,
      action: 'register_named_persona',
      signer_key_id: a.signer.keyId,
      controller_keys: a.controllerKeys,
      controller_threshold: 1,
    };
    if (a.deliveryConstraints !== undefined) body.delivery_constraints = a.deliveryConstraints;
    const prepared = await this.call<PreparedPersona>('POST', encodePath`/personas/${persona}/named/prepare`, body);
    checkPersonaPayload(preparedBytes(prepared), {
      persona,
      kind: 'RegisterNamed',
      operatorDid: a.operatorDid,
      signerKeyId: a.signer.keyId,
      controllerKeyIds: a.controllerKeys,
    });
    return this.call('PUT', encodePath`/personas/${persona}/named`, this.signed(prepared, a.signer));
  }

  /** Revocation (§7.6): prepare, check, sign, `DELETE /personas/{persona}`. */
  async revoke(persona: string, a: { operatorDid?: string; signer: Signer }): Promise<PersonaSubmitResponse> {
    const body: Json = { action: 'revoke_persona', signer_key_id: a.signer.keyId, ...(a.operatorDid === undefined ? {} : { operator_did: a.operatorDid }) };
    const prepared = await this.call<PreparedPersona>('POST', encodePath`/personas/${persona}/prepare`, body);
    checkPersonaPayload(preparedBytes(prepared), { persona, kind: 'Revoke', operatorDid: a.operatorDid, signerKeyId: a.signer.keyId });
    return this.call('DELETE', encodePath`/personas/${persona}`, this.signed(prepared, a.signer));
  }

  /** Controller rotation (§7.6): the signer must be in the current and the new set. */
  async rotateControllers(persona: string, a: { operatorDid?: string; signer: Signer; controllerKeys: string[] }): Promise<PersonaSubmitResponse> {
    const body: Json = {
      action: 'rotate_persona_controllers',
      signer_key_id: a.signer.keyId,
      controller_keys: a.controllerKeys,
      controller_threshold: 1,
      ...(a.operatorDid === undefined ? {} : { operator_did: a.operatorDid }),
    };
    const prepared = await this.call<PreparedPersona>('POST', encodePath`/personas/${persona}/prepare`, body);
    checkPersonaPayload(preparedBytes(prepared), {
      persona,
      kind: 'RotateControllers',
      operatorDid: a.operatorDid,
      signerKeyId: a.signer.keyId,
      controllerKeyIds: a.controllerKeys,
    });
    return this.call('PUT', encodePath`/personas/${persona}/controllers`, this.signed(prepared, a.signer));
  }

  /**
   * Transfer, new operator's half (§7.7 steps 1–2): verify the challenge with the new controller set, check the
   * acceptance payload and sign it. The result goes to the current operator.
   */
  async acceptTransfer(
    persona: string,
    a: { challengeId: string; newOperatorDid: string; signer: Signer } & PersonaIntent,
  ): Promise<{ challenge_id: string; new_operator_signature: string }> {
    const prepared = await this.verify(persona, a.challengeId, a.newOperatorDid, 'transfer_persona', a.signer, a);
    const acceptance = preparedBytes({ payload_to_sign: prepared.acceptance_payload });
    checkTransferAcceptance(this.profile, acceptance, { persona, newOperatorDid: a.newOperatorDid, signerKeyId: a.signer.keyId });
    return { challenge_id: a.challengeId, new_operator_signature: toBase64(a.signer.key.sign(acceptance)) };
  }

  /** Transfer, current operator's half (§7.7 steps 3–4): prepare with the new operator's signature, check, sign, submit. */
  async completeTransfer(
    persona: string,
    a: { challengeId: string; operatorDid: string; newOperatorSignature: string; signer: Signer },
  ): Promise<PersonaSubmitResponse> {
    const body: Json = {
      operator_did: a.operatorDid,
      challenge_id: a.challengeId,
      new_operator_signature: a.newOperatorSignature,
      signer_key_id: a.signer.keyId,
    };
    const prepared = await this.call<PreparedPersona>('POST', encodePath`/personas/${persona}/transfer/prepare`, body);
    checkPersonaPayload(preparedBytes(prepared), { persona, kind: 'Transfer', operatorDid: a.operatorDid, signerKeyId: a.signer.keyId });
    return this.call('PUT', encodePath`/personas/${persona}/transfer`, this.signed(prepared, a.signer));
  }
}
