/**
 * Personas (http-api.md §7): reads and nonces; every change — DNS register / renew with a verified challenge,
 * named personas, revocation, controller rotation and transfer — runs the write pipeline with a change kind of
 * src/directory/changes/persona-*.ts. The ledger's persona module (src/ledger/runtime/personas.ts) stays the
 * judge of every rule.
 */
import { isoMs } from '../base/clock.js';
import { DdnError } from '../base/errors.js';
import { getDidRecord } from '../ledger/records.js';
import { operatorNonce, personaNonce, policyNonce, policyV3Nonce } from '../ledger/runtime/nonces.js';
import { getPersona, personaLiveness } from '../ledger/runtime/persona-state.js';
import { OPERATIONS, PERSONA_EXTRINSIC, type PersonaEnv } from './changes/persona-common.js';
import { PREPARE_PERSONA_CONTROL, SUBMIT_PERSONA_CONTROL, type ControlPrepare, type ControlSubmit } from './changes/persona-control.js';
import { SUBMIT_DNS_PERSONA, type DnsPersonaSubmit } from './changes/persona-dns.js';
import { PREPARE_NAMED_PERSONA, SUBMIT_NAMED_PERSONA, type NamedPrepare, type NamedSubmission } from './changes/persona-named.js';
import { PREPARE_PERSONA_TRANSFER, SUBMIT_PERSONA_TRANSFER, type TransferPrepare, type TransferSubmit } from './changes/persona-transfer.js';
import type { DirectoryDeps } from './deps.js';
import type { PersonaChallenges } from './persona-challenges.js';
import { personaRecordToJson } from './persona-fields.js';
import { parsePersonaName } from './submission.js';
import { prepareChange, prepareChangeSync, submitChange } from './write-pipeline.js';
import type { OperatorNonceResponse, PersonaNoncesResponse, PersonaPrepareResponse, PersonaRecordResponse, PersonaSubmitResponse } from '../wire/personas.js';

export class PersonaService {
  private readonly env: PersonaEnv;

  constructor(
    private readonly deps: DirectoryDeps,
    readonly challenges: PersonaChallenges,
  ) {
    this.env = { ...deps, personaChallenges: challenges };
  }

  private get ledger() {
    return this.deps.ledger;
  }

  private now(): number {
    return this.deps.clock.nowMs();
  }

  // ---------------------------------------------------------------- reads (§7.1)

  read(raw: string): PersonaRecordResponse {
    const persona = parsePersonaName(raw);
    const view = this.ledger.finalizedView();
    const rec = getPersona(view, persona);
    if (!rec) throw new DdnError('persona_not_found', 'persona not found', { persona });
    const now = this.now();
    const block = this.ledger.finalizedRefNow();
    const pending = this.ledger
      .pendingEntries()
      .filter((e) => e.call.name === PERSONA_EXTRINSIC && e.tx.meta.subject === persona)
      .map((e) => ({
        operation: OPERATIONS[e.tx.meta.action] ?? e.tx.meta.action,
        action: e.tx.meta.action,
        nonce: e.tx.meta.nonce ?? null,
        tx_hash: e.tx.txHash,
        submitted_at: isoMs(e.tx.submittedAtMs),
      }));
    return {
      ...personaRecordToJson(persona, rec, now, personaLiveness(view, now, persona).ok),
      block_number: block.number,
      block_hash: block.hash,
      pending_operations: pending,
    };
  }

  nonces(raw: string): PersonaNoncesResponse {
    const persona = parsePersonaName(raw);
    if (!getPersona(this.ledger.finalizedView(), persona)) {
      throw new DdnError('persona_not_found', 'persona not found (or its registration is not final yet)', { persona });
    }
    const pool = this.ledger.poolView();
    const operator = (getPersona(pool, persona) ?? getPersona(this.ledger.finalizedView(), persona)!).operatorDid;
    return {
      persona,
      operator_did: operator,
      persona_nonce: personaNonce(pool, persona).toString(),
      operator_nonce: operatorNonce(pool, operator).toString(),
      policy_nonce: policyNonce(pool, operator).toString(),
      policy_v3_nonce: policyV3Nonce(pool, operator).toString(),
    };
  }

  operatorNonce(did: string): OperatorNonceResponse {
    const pool = this.ledger.poolView();
    if (!getDidRecord(pool, did)) throw new DdnError('did_not_found', 'DID not found', { did });
    return { operator_did: did, operator_nonce: operatorNonce(pool, did).toString() };
  }

  // ---------------------------------------------------------------- changes (§7.4–§7.7)

  // Each takes its route parser's result (src/directory/changes/persona-*.ts): the persona name canonical
  // (dnsPersonaOf, namedPersonaOf or parsePersonaName, by route) and the body's fields, those refused after a
  // state check kept deferred.

  /** `PUT /personas/{p}`: DNS register or renew. */
  submitRegistration(req: DnsPersonaSubmit): Promise<PersonaSubmitResponse> {
    return submitChange(this.env, SUBMIT_DNS_PERSONA, req);
  }

  prepareNamed(req: NamedPrepare): PersonaPrepareResponse {
    return prepareChangeSync(this.env, PREPARE_NAMED_PERSONA, req);
  }

  submitNamed(req: NamedSubmission): Promise<PersonaSubmitResponse> {
    return submitChange(this.env, SUBMIT_NAMED_PERSONA, req);
  }

  prepareControl(req: ControlPrepare): PersonaPrepareResponse {
    return prepareChangeSync(this.env, PREPARE_PERSONA_CONTROL, req);
  }

  /** `DELETE /personas/{p}` (revoke) and `PUT /personas/{p}/controllers` (rotate), as the route's parser read them. */
  submitControl(req: ControlSubmit): Promise<PersonaSubmitResponse> {
    return submitChange(this.env, SUBMIT_PERSONA_CONTROL, req);
  }

  prepareTransfer(req: TransferPrepare): Promise<PersonaPrepareResponse> {
    return prepareChange(this.env, PREPARE_PERSONA_TRANSFER, req);
  }

  submitTransfer(req: TransferSubmit): Promise<PersonaSubmitResponse> {
    return submitChange(this.env, SUBMIT_PERSONA_TRANSFER, req);
  }
}
