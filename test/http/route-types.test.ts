/**
 * A route's parser tied to its request schemas at compile time (src/http/route.ts `Tied`): the `body` and `query`
 * members of a parser's result must be fields the route's `body` / `query` schema declares, of the schema's type
 * (or `unknown`: read, not yet checked). The `@ts-expect-error` lines are the proof — `npm run typecheck` fails if
 * any of them compiles (a parser returning an undeclared field, a field of another type, a body on a route that
 * declares none). The runtime part checks that the tie erases to the same route object.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from 'typebox';
import { json } from '../../src/http/context.js';
import { asIs, defineRoute, type Unchecked } from '../../src/http/route.js';

const Body = Type.Object({ did: Type.String(), device_id: Type.Optional(Type.String()), count: Type.Integer() });
const Query = Type.Object({ limit: Type.Optional(Type.String()) });
const Answer = Type.Object({ ok: Type.Boolean() });

const base = { method: 'POST' as const, url: '/t', summary: 't', answers: { 200: Answer }, errors: [], handle: () => json(200, { ok: true }) };

const typed = defineRoute({ ...base, body: Body, parse: () => ({ body: { did: 'd', count: 1 }, derived: 1n }) });
const raw = (body: Record<string, unknown> | undefined): Unchecked<typeof Body> => body ?? {};
const unchecked = defineRoute({ ...base, body: Body, parse: (ctx) => ({ body: raw(ctx.body) }) });
const queried = defineRoute({ ...base, query: Query, parse: () => ({ query: { limit: '10' } }) });
const passedOn = defineRoute({ ...base, parse: asIs });
const domainOnly = defineRoute({ ...base, body: Body, parse: () => ({ did: 'd', nonce: 1n }) });

// @ts-expect-error `alias` is not a field of the body schema
defineRoute({ ...base, body: Body, parse: () => ({ body: { did: 'd', count: 1, alias: 'a' } }) });
// @ts-expect-error `count` is an integer in the body schema, not a string
defineRoute({ ...base, body: Body, parse: () => ({ body: { did: 'd', count: '1' } }) });
// @ts-expect-error the route declares no body schema, so its parser has no wire body to pass on
defineRoute({ ...base, parse: () => ({ body: { did: 'd' } }) });
// @ts-expect-error a raw JSON object is not the body schema's fields (use `Unchecked<typeof Body>`)
defineRoute({ ...base, body: Body, parse: (ctx) => ({ body: ctx.body ?? {} }) });
// @ts-expect-error `before` is not a field of the query schema
defineRoute({ ...base, query: Query, parse: () => ({ query: { before: '1' } }) });
// @ts-expect-error the route declares no query schema
defineRoute({ ...base, body: Body, parse: () => ({ query: { limit: '1' } }) });

describe('defineRoute ties the parser to the request schemas', () => {
  it('erases to the declared route: the schemas and the parser kept as given', () => {
    assert.equal(typed.body, Body);
    assert.equal(unchecked.body, Body);
    assert.equal(queried.query, Query);
    assert.equal(passedOn.parse, asIs);
    assert.equal(domainOnly.body, Body);
  });
});
