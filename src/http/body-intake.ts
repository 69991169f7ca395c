/**
 * How a role's server takes request bodies: every body, whatever its media type, is read by our reader (the §0.3
 * limits, 408, the drain of a too-large one) against the process's body budget, and parsed by ours (415 for a
 * non-JSON one); an `Expect: 100-continue` body that does not fit the budget is refused before it is sent.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { BodyBudget } from './body-budget.js';
import { BodyError, readRequestBody, type BodyHold, type BodyLimits } from './body-reader.js';
import { parseJsonBody, type JsonObject } from './json-body.js';
import { holdOn, refusalOf, responseOf, setHold } from './request-state.js';

export interface BodyIntake {
  /**
   * Where `req`'s body bytes are reserved: the body budget's reservation for its client address (as the rate
   * limits count it), given back when its response closes; undefined without a budget.
   */
  holdOf(req: IncomingMessage): BodyHold | undefined;
  /**
   * The refusal of an `Expect: 100-continue` body that does not fit the body budget; when it fits, its bytes stay
   * reserved for the body reader (which then reserves them no second time).
   */
  continueRefusal(req: IncomingMessage): BodyError | undefined;
  /**
   * fastify's content-type parser: reads and parses the body, keeping its bytes as `request.ddnRawBody` (only reads
   * it when the request is marked `ddnParseLater`: {@link parseBodyNow} parses it then).
   */
  readBody(request: FastifyRequest, payload: IncomingMessage, done: (err: Error | null, body?: unknown) => void): void;
}

export function bodyIntake(limits: BodyLimits, budget: BodyBudget | undefined, clientKeyOf: (req: IncomingMessage) => string): BodyIntake {
  function holdOf(req: IncomingMessage): BodyHold | undefined {
    const held = holdOn(req);
    if (budget === undefined || held !== undefined) return held;
    const reservation = budget.open(clientKeyOf(req));
    const res = responseOf(req);
    if (res === undefined || res.closed) reservation.release();
    else res.once('close', () => reservation.release());
    setHold(req, reservation);
    return reservation;
  }

  function continueRefusal(req: IncomingMessage): BodyError | undefined {
    const declared = Number(req.headers['content-length']);
    const hold = declared > 0 ? holdOf(req) : undefined;
    if (hold === undefined) return undefined;
    const refused = hold.grow(declared, true);
    if (refused !== undefined) return new BodyError(refused, true);
    let prepaid = declared;
    setHold(req, {
      grow: (bytes, whole) => {
        if (prepaid >= bytes) {
          prepaid -= bytes;
          return undefined;
        }
        return hold.grow(bytes, whole);
      },
    });
    return undefined;
  }

  function readBody(request: FastifyRequest, _payload: IncomingMessage, done: (err: Error | null, body?: unknown) => void): void {
    const refused = refusalOf(request.raw);
    if (refused !== undefined) {
      done(refused, undefined);
      return;
    }
    readRequestBody(request.raw, limits, holdOf(request.raw)).then(
      (raw) => {
        request.ddnRawBody = raw !== undefined && raw.length > 0 ? raw : null;
        if (request.ddnParseLater) {
          done(null, undefined);
          return;
        }
        let parsed: JsonObject | undefined;
        try {
          parsed = bodyOf(request);
        } catch (err) {
          done(err as Error, undefined);
          return;
        }
        done(null, parsed);
      },
      (err: Error) => done(err, undefined),
    );
  }

  return { holdOf, continueRefusal, readBody };
}

/**
 * Parses the body of a request whose parse was left for later (`ddnParseLater`) into `request.body`; throws its
 * refusal. A request whose body was parsed already is left as it is.
 */
export function parseBodyNow(request: FastifyRequest): void {
  if (!request.ddnParseLater) return;
  request.ddnParseLater = false;
  request.body = bodyOf(request);
}

/** The parse of the body bytes read (`request.ddnRawBody`); throws its refusal. */
function bodyOf(request: FastifyRequest): JsonObject | undefined {
  return request.ddnRawBody === null ? undefined : parseJsonBody(request.ddnRawBody, request.headers['content-type']);
}
