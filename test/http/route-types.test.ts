/**
 * A route's parser reads the request through the route's own schemas (src/http/route.ts `RouteContext`): its body
 * is `Unchecked<body schema>` (each declared field `unknown` until the parser checks it), its query the declared
 * parameters, its headers (with a `headers` schema) the declared ones, and a `params` schema names exactly the URL's
 * parameters. A parser function takes what it reads as `Unchecked<its schema>` or `Reads<names>`. The
 * `@ts-expect-error` lines are the proof — `npm run typecheck` fails if any of them compiles: a parser reading a field
 * its route's schema does not declare, a route whose schema lacks a field its parser reads, an undeclared query
 * parameter or header, a params schema that is not the URL's, a raw JSON object passed as a schema's fields. The
 * runtime part checks that the typed context erases to the same route object and that `bodyFields` is the body.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from 'typebox';
import { json } from '../../src/http/context.js';
import type { Reads } from '../../src/http/json-body.js';
import { asIs, bodyFields, defineRoute, type Unchecked } from '../../src/http/route.js';

const Body = Type.Object({ did: Type.String(), device_id: Type.Optional(Type.String()), count: Type.Integer() });
const Other = Type.Object({ did: Type.String(), alias: Type.String() });
const Either = Type.Union([Type.Object({ action: Type.Literal('a'), did: Type.String() }), Type.Object({ action: Type.Literal('b'), alias: Type.String() })]);
const Query = Type.Object({ limit: Type.Optional(Type.String()) });
const Headers = Type.Object({ 'X-Nonce': Type.String() });
const Answer = Type.Object({ ok: Type.Boolean() });

const base = { method: 'POST' as const, url: '/t/:id' as const, summary: 't', answers: { 200: Answer }, errors: [], handle: () => json(200, { ok: true }) };

/** A parser of `Body`'s fields (as a change's parser declares its input). */
const parseBody = (body: Unchecked<typeof Body>): { did: unknown; count: unknown } => ({ did: body.did, count: body.count });
/** A helper reading named fields. */
const readDid = (body: Reads<'did'>): unknown => body.did;

const typed = defineRoute({ ...base, body: Body, parse: (ctx) => parseBody(bodyFields(ctx)) });
const helper = defineRoute({ ...base, body: Other, parse: (ctx) => readDid(bodyFields(ctx)) });
const union = defineRoute({ ...base, body: Either, parse: (ctx) => [ctx.body?.did, ctx.body?.alias, ctx.body?.action] });
const queried = defineRoute({ ...base, query: Query, parse: (ctx) => ctx.query.limit });
const headed = defineRoute({ ...base, headers: Headers, parse: (ctx) => ctx.header('X-Nonce') });
const withParams = defineRoute({ ...base, params: Type.Object({ id: Type.String() }), parse: (ctx) => ctx.params.id });
const passedOn = defineRoute({ ...base, parse: asIs });

// @ts-expect-error `alias` is not a field of the body schema: the parser cannot read it
defineRoute({ ...base, body: Body, parse: (ctx) => ctx.body?.alias });
// @ts-expect-error the route's schema lacks `count`, which its parser reads
defineRoute({ ...base, body: Other, parse: (ctx) => parseBody(bodyFields(ctx)) });
// @ts-expect-error the route's schema lacks `did`, which the helper its parser calls reads
defineRoute({ ...base, body: Type.Object({ alias: Type.String() }), parse: (ctx) => readDid(bodyFields(ctx)) });
// @ts-expect-error the route declares no body schema, so its parser has no fields to read
defineRoute({ ...base, parse: (ctx) => readDid(bodyFields(ctx)) });
// @ts-expect-error a raw JSON object is not a schema's fields (a field it lacks would go unnoticed)
parseBody({} as Record<string, unknown>);
// @ts-expect-error `before` is not a parameter of the query schema
defineRoute({ ...base, query: Query, parse: (ctx) => ctx.query.before });
// @ts-expect-error the route declares no query schema, so it has no query parameter to read
defineRoute({ ...base, parse: (ctx) => ctx.query.limit });
// @ts-expect-error `X-Key-Id` is not a header of the route's headers schema
defineRoute({ ...base, headers: Headers, parse: (ctx) => ctx.header('X-Key-Id') });
// @ts-expect-error the params schema names `did`, the URL names `id`
defineRoute({ ...base, params: Type.Object({ did: Type.String() }), parse: asIs });
// @ts-expect-error the params schema lacks the URL's `id`
defineRoute({ ...base, url: '/t/:id/:n' as const, params: Type.Object({ id: Type.String() }), parse: asIs });

describe('defineRoute ties the parser to the request schemas', () => {
  it('erases to the declared route: the schemas and the parser kept as given', () => {
    assert.equal(typed.body, Body);
    assert.equal(helper.body, Other);
    assert.equal(union.body, Either);
    assert.equal(queried.query, Query);
    assert.equal(headed.headers, Headers);
    assert.ok(withParams.params !== undefined);
    assert.equal(passedOn.parse, asIs);
  });

  it('bodyFields is the request body itself, or an empty object when the request had none', () => {
    const body = { did: 'd' };
    assert.equal(bodyFields<typeof Other>({ body: body as unknown as Unchecked<typeof Other> }), body);
    assert.deepEqual(bodyFields<typeof Other>({ body: undefined }), {});
  });
});
