/**
 * A route's refusal order as a ladder: each rung a fault (a body patch) and the answer it gets. Rung k is sent with
 * the faults of every later rung too, so it passes only if its refusal comes before each later one (a body with two
 * faults gets the first one's code).
 */
import assert from 'node:assert/strict';
import { assertError, type Reply } from './directory-flows.js';

type Body = Record<string, unknown>;

export interface Rung {
  fault: Body;
  status: number;
  code: string;
  /** `details.field` of the answer, where two rungs share a code. */
  field?: string;
}

/**
 * `base` with the faults of `rungs[from..]` (`from`: an index, or the first rung it holds for); where two rungs
 * fault one field, the earlier rung's value is kept.
 */
export function faulted(base: Body, rungs: readonly Rung[], from: number | ((r: Rung) => boolean) = 0): Body {
  if (typeof from !== 'number') from = rungs.findIndex(from);
  assert.ok(from >= 0, 'no such rung');
  let body = { ...base };
  for (let j = rungs.length - 1; j >= from; j--) body = { ...body, ...rungs[j].fault };
  return body;
}

/** Sends, for each rung in order, `base` with that rung's fault and every later one, and checks the rung's answer. */
export async function climb(send: (body: Body) => Promise<Reply>, base: Body, rungs: readonly Rung[]): Promise<void> {
  for (let k = 0; k < rungs.length; k++) {
    const { status, code, field } = rungs[k];
    const res = await send(faulted(base, rungs, k));
    assert.doesNotThrow(() => assertError(res, status, code), `rung ${k} (${JSON.stringify(rungs[k].fault)}): ${res.status} ${JSON.stringify(res.body)}`);
    if (field !== undefined) assert.equal((res.body.details as Body | undefined)?.field, field, `rung ${k}: details.field`);
  }
}
