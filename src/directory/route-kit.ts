/**
 * How a Directory route is declared (src/http/route.ts): a read, a preparation or a submission, each one object with
 * its URL, shapes, error codes, rate class and handler. Reads count as `read`; a preparation counts its client
 * address only (it changes nothing, so nobody can use up a DID's budget by preparing changes to it); a submission
 * also counts against its target once it succeeds. The families of error codes the Directory's use-cases share are
 * here too, so each route lists what it can answer.
 */
import type { TSchema } from 'typebox';
import type { ErrorCode } from '../base/errors.js';
import type { HttpMethod, PathParams, RequestContext } from '../http/context.js';
import type { RateClass } from '../http/rate-limit.js';
import { asIs, defineRoute, type AnswerOf, type Answers, type Route } from '../http/route.js';
import { LEDGER_CODES } from './ledger-errors.js';

export type Ctx<U extends string> = RequestContext<PathParams<U>>;

interface Common<U extends string, R extends Answers> {
  url: U;
  summary: string;
  answers: R;
  errors: readonly ErrorCode[];
  params?: TSchema;
  query?: TSchema;
  tags?: string[];
  handle: (ctx: Ctx<U>) => AnswerOf<R> | Promise<AnswerOf<R>>;
}

interface Change<U extends string, R extends Answers> extends Common<U, R> {
  method: HttpMethod;
  body: TSchema;
  rateClass?: RateClass;
}

const TAGS = ['directory'];

function route<U extends string, R extends Answers>(d: Common<U, R>, method: HttpMethod, rateClass: RateClass, more: object): Route {
  return defineRoute({
    method,
    tags: TAGS,
    ...d,
    rateClass,
    ...more,
    parse: asIs,
    handle: (_input, ctx: Ctx<U>) => d.handle(ctx),
  });
}

/** A `GET` route (rate class `read`). */
export function read<U extends string, R extends Answers>(d: Common<U, R>): Route {
  return route(d, 'GET', 'read', {});
}

/** A preparation (or another change without a target): counted per client address only. */
export function prepare<U extends string, R extends Answers>(d: Change<U, R>): Route {
  return route(d, d.method, d.rateClass ?? 'directory-write', { body: d.body });
}

/** A submission: counted per client address and, once it succeeds, against `target`. */
export function submit<U extends string, R extends Answers>(d: Change<U, R> & { target: (ctx: Ctx<U>) => string | undefined }): Route {
  return route(d, d.method, d.rateClass ?? 'directory-write', { body: d.body, rateTarget: d.target });
}

/** A DID in the path. */
export const DID_READ: readonly ErrorCode[] = ['invalid_did', 'did_not_found'];

/** A signed change's request fields and its signer and state checks (src/directory/submission.ts, request-fields.ts). */
const SIGNED: readonly ErrorCode[] = [
  'invalid_request',
  'invalid_did',
  'path_body_mismatch',
  'action_mismatch',
  'unsupported_action',
  'invalid_nonce',
  'invalid_valid_until',
  'authorization_expired',
  'invalid_expiry',
  'invalid_signature_encoding',
  'invalid_canonical_payload',
  'canonical_payload_mismatch',
  'signer_not_authorized',
  'invalid_signature',
  'nonce_overflow',
  'nonce_mismatch',
  'did_not_found',
  'did_deactivated',
];

/** What a preparation can be refused with: the request fields, and the ledger's checks it runs without writing. */
export const PREPARED: readonly ErrorCode[] = [...new Set<ErrorCode>([...SIGNED, ...LEDGER_CODES])];

/** What a submission can be refused with: its fields, signature and state, the ledger's checks, a full pool. */
export const SUBMITTED: readonly ErrorCode[] = [...new Set<ErrorCode>([...SIGNED, ...LEDGER_CODES, 'ledger_unavailable', 'chain_unavailable'])];

/** Persona changes add the persona's own checks. */
export const PERSONA: readonly ErrorCode[] = [
  'invalid_persona',
  'persona_not_found',
  'persona_already_exists',
  'persona_not_dns',
  'invalid_persona_controller',
  'challenge_mismatch',
  'challenge_not_verified',
  'challenge_already_used',
];

/** Application changes add the application's own checks. */
export const APPLICATION: readonly ErrorCode[] = ['invalid_application_id', 'application_not_found', 'application_already_exists', 'application_proof_stale'];

/** Registration adds the new DID's checks. */
export const REGISTRATION: readonly ErrorCode[] = [
  'did_already_exists',
  'did_deleted',
  'alias_taken',
  'invalid_alias',
  'invalid_document',
  'invalid_root_pubkey',
  'invalid_timestamp_token',
  'legacy_registration_unsupported',
];

/** The union of code lists, each once. */
export const codes = (...lists: (readonly ErrorCode[])[]): ErrorCode[] => [...new Set(lists.flat())];
