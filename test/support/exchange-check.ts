/**
 * One HTTP exchange read by a test, checked against the serving role's document (test/support/openapi-check.ts):
 * a JSON answer's body against the route's schema for its status (its error `code` recorded for the run's check,
 * test/support/answered-codes.ts), and an accepted (2xx) request body that parses as JSON against the route's
 * request schema. Shared by the `fetch` check of in-process nodes (contract-check.ts) and the proxy in front of
 * child processes (checked-proxy.ts).
 */
import { recordAnswer } from './answered-codes.js';
import { JSON_TYPES, type OpenApiChecker } from './openapi-check.js';

export interface Exchange {
  method: string;
  path: string;
  status: number;
  /** The answer's `content-type` ('' when none). */
  contentType: string;
  /** The answer's body text; undefined when not read (a HEAD, a body not kept). */
  answer: string | undefined;
  /** The request body the test sent, as text; undefined when none or not kept. */
  sent: string | undefined;
}

/** What in `ex` its document does not describe (empty when all of it matches). */
export function exchangeProblems(checker: OpenApiChecker, ex: Exchange): string[] {
  const problems: string[] = [];
  const { method, path, status, contentType } = ex;
  if (JSON_TYPES.test(contentType) && method !== 'HEAD' && ex.answer !== undefined) {
    let body: unknown;
    try {
      body = JSON.parse(ex.answer);
    } catch {
      return [`${method} ${path} ${status}: not JSON though ${contentType}`];
    }
    recordAnswer(status, body);
    const problem = checker.problem(method, path, status, body, contentType);
    if (problem !== undefined) problems.push(problem);
  }
  if (status < 300 && ex.sent !== undefined) {
    let sent: unknown;
    try {
      sent = JSON.parse(ex.sent);
    } catch {
      return problems;
    }
    const problem = checker.requestProblem(method, path, sent);
    if (problem !== undefined) problems.push(problem);
  }
  return problems;
}
