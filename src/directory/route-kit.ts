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
import { asIs, defineRoute, type AnswerOf, type Answers, type Route, type Tied } from '../http/route.js';
import { LEDGER_CODES } from './ledger-errors.js';

export type Ctx<U extends string> = RequestContext<PathParams<U>>;

interface Shape<U extends string, R extends Answers, Q extends TSchema | undefined> {
  url: U;
  summary: string;
  answers: R;
  errors: readonly ErrorCode[];
  params?: TSchema;
  query?: Q;
  tags?: string[];
}

type Answer<R extends Answers> = AnswerOf<R> | Promise<AnswerOf<R>>;

/** A route whose handler reads the request itself (reads whose only input is a path value the use-case checks). */
interface Plain<U extends string, R extends Answers, Q extends TSchema | undefined> extends Shape<U, R, Q> {
  parse?: undefined;
  handle: (ctx: Ctx<U>) => Answer<R>;
}

/**
 * A route with a request-shape parser (run in fastify's preHandler, after the rate gates): its typed, decoded
 * result is the handler's input, so the use-case keeps only the checks that need state. Its result's `body` and
 * `query` members are tied to the route's `body` (`B`) and `query` (`Q`) schemas (src/http/route.ts `Tied`); the
 * rest is domain values the parser derived (bigint nonces, signature bytes, checked names).
 */
interface Parsed<U extends string, R extends Answers, I, B extends TSchema | undefined, Q extends TSchema | undefined> extends Shape<U, R, Q> {
  parse: (ctx: Ctx<U>) => I & NoInfer<Tied<I, B, Q>>;
  handle: (input: I, ctx: Ctx<U>) => Answer<R>;
}

type Common<U extends string, R extends Answers, I, B extends TSchema | undefined, Q extends TSchema | undefined> = Plain<U, R, Q> | Parsed<U, R, I, B, Q>;

interface Changing<B extends TSchema> {
  method: HttpMethod;
  body: B;
  rateClass?: RateClass;
}

type Change<U extends string, R extends Answers, I, B extends TSchema, Q extends TSchema | undefined> = Common<U, R, I, B, Q> & Changing<B>;

interface Targeted<U extends string> {
  target: (ctx: Ctx<U>) => string | undefined;
}

const TAGS = ['directory'];

function route<U extends string, R extends Answers, I, B extends TSchema | undefined, Q extends TSchema | undefined>(
  d: Common<U, R, I, B, Q>,
  method: HttpMethod,
  rateClass: RateClass,
  more: object,
): Route {
  const common = { method, tags: TAGS, ...d, rateClass, ...more };
  if (d.parse === undefined) {
    const plain = d.handle;
    return defineRoute({ ...common, parse: asIs, handle: (_input, ctx: Ctx<U>) => plain(ctx) });
  }
  // the tie was checked where the route was declared (`Parsed`); the result travels wrapped, which claims no wire
  // member, since a generic result cannot be checked again here
  const { parse, handle } = d;
  return defineRoute({ ...common, parse: (ctx: Ctx<U>) => ({ parsed: parse(ctx) }), handle: ({ parsed }, ctx) => handle(parsed, ctx) });
}

/** A `GET` route (rate class `read`). */
export function read<U extends string, R extends Answers, I, Q extends TSchema | undefined = undefined>(d: Parsed<U, R, I, undefined, Q>): Route;
export function read<U extends string, R extends Answers, Q extends TSchema | undefined = undefined>(d: Plain<U, R, Q>): Route;
export function read<U extends string, R extends Answers, I, Q extends TSchema | undefined>(d: Common<U, R, I, undefined, Q>): Route {
  return route(d, 'GET', 'read', {});
}

/** A preparation (or another change without a target): counted per client address only. */
export function prepare<U extends string, R extends Answers, I, B extends TSchema, Q extends TSchema | undefined = undefined>(
  d: Parsed<U, R, I, B, Q> & Changing<B>,
): Route;
export function prepare<U extends string, R extends Answers, B extends TSchema, Q extends TSchema | undefined = undefined>(
  d: Plain<U, R, Q> & Changing<B>,
): Route;
export function prepare<U extends string, R extends Answers, I, B extends TSchema, Q extends TSchema | undefined>(d: Change<U, R, I, B, Q>): Route {
  return route<U, R, I, B, Q>(d, d.method, d.rateClass ?? 'directory-write', { body: d.body });
}

/** A submission: counted per client address and, once it succeeds, against `target`. */
export function submit<U extends string, R extends Answers, I, B extends TSchema, Q extends TSchema | undefined = undefined>(
  d: Parsed<U, R, I, B, Q> & Changing<B> & Targeted<U>,
): Route;
export function submit<U extends string, R extends Answers, B extends TSchema, Q extends TSchema | undefined = undefined>(
  d: Plain<U, R, Q> & Changing<B> & Targeted<U>,
): Route;
export function submit<U extends string, R extends Answers, I, B extends TSchema, Q extends TSchema | undefined>(
  d: Change<U, R, I, B, Q> & Targeted<U>,
): Route {
  return route<U, R, I, B, Q>(d, d.method, d.rateClass ?? 'directory-write', { body: d.body, rateTarget: d.target });
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

/**
 * What a submission can be refused with: its fields, signature and state, the ledger's checks, a full pool, and a
 * full disk (the accepted change is persisted before the 202: src/http/error-body.ts maps a storage failure to 507).
 */
export const SUBMITTED: readonly ErrorCode[] = [
  ...new Set<ErrorCode>([...SIGNED, ...LEDGER_CODES, 'ledger_unavailable', 'chain_unavailable', 'insufficient_storage']),
];

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
