/**
 * How a Directory route is declared (src/http/route.ts): a read, a preparation or a submission, each one object with
 * its URL, shapes, error codes, rate class and handler. Reads count as `read`; a preparation counts its client
 * address only (it changes nothing, so nobody can use up a DID's budget by preparing changes to it); a submission
 * also counts against its target once it succeeds. The families of error codes the Directory's use-cases share are
 * here too, so each route lists what it can answer.
 */
import type { TSchema } from 'typebox';
import type { ErrorCode } from '../base/errors.js';
import type { HttpMethod } from '../http/context.js';
import type { RateClass } from '../http/rate-limit.js';
import { asIs, defineRoute, type AnswerOf, type Answers, type ParamsOf, type Route, type RouteContext } from '../http/route.js';
import { LEDGER_CODES } from './ledger-errors.js';

/** A Directory route's request as its schemas type it (src/http/route.ts `RouteContext`). */
export type Ctx<U extends string, B = undefined, Q = undefined> = RouteContext<U, B, Q>;

interface Shape<U extends string, R extends Answers, Q extends TSchema | undefined, P extends TSchema | undefined> {
  url: U;
  summary: string;
  answers: R;
  errors: readonly ErrorCode[];
  params?: P & NoInfer<ParamsOf<U, P>>;
  query?: Q;
  tags?: string[];
}

type Answer<R extends Answers> = AnswerOf<R> | Promise<AnswerOf<R>>;

type Opt = TSchema | undefined;

/** A route whose handler reads the request itself (reads whose only input is a path value the use-case checks). */
interface Plain<U extends string, R extends Answers, B extends Opt, Q extends Opt, P extends Opt> extends Shape<U, R, Q, P> {
  parse?: undefined;
  handle: (ctx: Ctx<U, B, Q>) => Answer<R>;
}

/**
 * A route with a request-shape parser (run in fastify's preHandler, after the rate gates): it reads the request
 * through the route's `body` (`B`) and `query` (`Q`) schemas (src/http/route.ts `RouteContext`), and its typed,
 * decoded result (domain values: bigint nonces, signature bytes, checked names) is the handler's input, so the
 * use-case keeps only the checks that need state.
 */
interface Parsed<U extends string, R extends Answers, I, B extends Opt, Q extends Opt, P extends Opt> extends Shape<U, R, Q, P> {
  parse: (ctx: Ctx<U, B, Q>) => I;
  handle: (input: I, ctx: Ctx<U, B, Q>) => Answer<R>;
}

type Common<U extends string, R extends Answers, I, B extends Opt, Q extends Opt, P extends Opt> = Plain<U, R, B, Q, P> | Parsed<U, R, I, B, Q, P>;

interface Changing<B extends TSchema> {
  method: HttpMethod;
  body: B;
  rateClass?: RateClass;
}

interface Targeted<U extends string, B extends Opt> {
  target: (ctx: Ctx<U, B>) => string | undefined;
}

const TAGS = ['directory'];

/**
 * The route object of `d`. Its reads were checked against its schemas where it was declared (`Plain`, `Parsed`); a
 * generic declaration cannot be checked again here, so it is erased as `defineRoute` erases every route.
 */
function route(d: Common<string, Answers, unknown, Opt, Opt, Opt>, method: HttpMethod, rateClass: RateClass, more: object): Route {
  const common = { method, tags: TAGS, ...d, rateClass, ...more };
  if (d.parse === undefined) {
    const plain = d.handle;
    return defineRoute({ ...common, parse: asIs, handle: (_input, ctx) => plain(ctx) });
  }
  return defineRoute({ ...common, parse: d.parse, handle: d.handle });
}

/** `d` with its types erased (each was checked against its schemas by the overload it matched). */
const erased = <D>(d: D): Common<string, Answers, unknown, Opt, Opt, Opt> => d as unknown as Common<string, Answers, unknown, Opt, Opt, Opt>;

/** A `GET` route (rate class `read`). */
export function read<U extends string, R extends Answers, I, Q extends Opt = undefined, P extends Opt = undefined>(d: Parsed<U, R, I, undefined, Q, P>): Route;
export function read<U extends string, R extends Answers, Q extends Opt = undefined, P extends Opt = undefined>(d: Plain<U, R, undefined, Q, P>): Route;
export function read(d: Common<string, Answers, unknown, undefined, Opt, Opt>): Route {
  return route(erased(d), 'GET', 'read', {});
}

/** A preparation (or another change without a target): counted per client address only. */
export function prepare<U extends string, R extends Answers, I, B extends TSchema, Q extends Opt = undefined, P extends Opt = undefined>(
  d: Parsed<U, R, I, B, Q, P> & Changing<B>,
): Route;
export function prepare<U extends string, R extends Answers, B extends TSchema, Q extends Opt = undefined, P extends Opt = undefined>(
  d: Plain<U, R, B, Q, P> & Changing<B>,
): Route;
export function prepare(d: Common<string, Answers, unknown, TSchema, Opt, Opt> & Changing<TSchema>): Route {
  return route(erased(d), d.method, d.rateClass ?? 'directory-write', { body: d.body });
}

/** A submission: counted per client address and, once it succeeds, against `target`. */
export function submit<U extends string, R extends Answers, I, B extends TSchema, Q extends Opt = undefined, P extends Opt = undefined>(
  d: Parsed<U, R, I, B, Q, P> & Changing<B> & Targeted<U, B>,
): Route;
export function submit<U extends string, R extends Answers, B extends TSchema, Q extends Opt = undefined, P extends Opt = undefined>(
  d: Plain<U, R, B, Q, P> & Changing<B> & Targeted<U, B>,
): Route;
export function submit(d: Common<string, Answers, unknown, TSchema, Opt, Opt> & Changing<TSchema> & Targeted<string, TSchema>): Route {
  return route(erased(d), d.method, d.rateClass ?? 'directory-write', { body: d.body, rateTarget: d.target });
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
