/**
 * Wire shapes of the W3C DID Resolution HTTP(S) binding (`GET /1.0/identifiers/{did}`, docs/api.md "W3C DID
 * Resolution") as TypeBox schemas: W3C's resolution and dereferencing results, not ddn's §0.6 forms.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { ServiceSchema, VerificationMethodSchema } from './json-forms.js';

/** A DID document in W3C's representation (`@context` in the JSON-LD one and in resolution results). */
export const W3cDidDocumentSchema = Type.Object(
  {
    '@context': Type.Optional(Type.Array(Type.String())),
    id: Type.String(),
    verificationMethod: Type.Array(VerificationMethodSchema),
    authentication: Type.Array(Type.String()),
    assertionMethod: Type.Array(Type.String()),
    capabilityInvocation: Type.Array(Type.String()),
    keyAgreement: Type.Optional(Type.Array(VerificationMethodSchema)),
    service: Type.Optional(Type.Array(ServiceSchema)),
  },
  { title: 'W3cDidDocument', additionalProperties: false },
);
export type W3cDidDocumentJson = Static<typeof W3cDidDocumentSchema>;

const XmlDateTime = Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$', description: 'XML datetime, UTC, no fractions' });

/** W3C's DID document metadata. */
export const W3cDocumentMetadataSchema = Type.Object(
  {
    created: Type.Optional(XmlDateTime),
    updated: Type.Optional(XmlDateTime),
    deactivated: Type.Optional(Type.Boolean()),
    versionId: Type.Optional(Type.String({ description: "the record's version" })),
    nextUpdate: Type.Optional(XmlDateTime),
    nextVersionId: Type.Optional(Type.String()),
  },
  { title: 'W3cDocumentMetadata', additionalProperties: false },
);
export type W3cDocumentMetadataJson = Static<typeof W3cDocumentMetadataSchema>;

/** W3C's error: RFC 9457 problem details whose `type` is `https://www.w3.org/ns/did#<TYPE>`. */
export const W3cErrorSchema = Type.Object(
  { type: Type.String({ pattern: '^https://www\\.w3\\.org/ns/did#[A-Z_]+$' }), title: Type.String(), detail: Type.String() },
  { title: 'W3cError' },
);
export type W3cErrorJson = Static<typeof W3cErrorSchema>;

const Metadata = Type.Object({ contentType: Type.Optional(Type.String()), error: Type.Optional(W3cErrorSchema) });

/** `application/did-resolution`. */
export const ResolutionResultSchema = Type.Object(
  {
    '@context': Type.Optional(Type.String()),
    didResolutionMetadata: Metadata,
    didDocument: Type.Union([W3cDidDocumentSchema, Type.Null()]),
    didDocumentMetadata: Type.Union([W3cDocumentMetadataSchema, Type.Object({}, { additionalProperties: false })]),
  },
  { title: 'ResolutionResult' },
);

/** `application/did-resolution` of a DID resolved (200): its document and that document's metadata. */
export const ResolvedResultSchema = Type.Object(
  {
    '@context': Type.Optional(Type.String()),
    didResolutionMetadata: Metadata,
    didDocument: W3cDidDocumentSchema,
    didDocumentMetadata: W3cDocumentMetadataSchema,
  },
  { title: 'ResolvedResult' },
);

/** `application/did-url-dereferencing`. */
export const DereferencingResultSchema = Type.Object(
  {
    '@context': Type.Optional(Type.String()),
    dereferencingMetadata: Metadata,
    contentStream: Type.Union([W3cDidDocumentSchema, VerificationMethodSchema, ServiceSchema, Type.String(), Type.Null()]),
    contentMetadata: Type.Union([W3cDocumentMetadataSchema, Type.Object({}, { additionalProperties: false })]),
  },
  { title: 'DereferencingResult' },
);

/** An answer in several media types, in the shape fastify's OpenAPI plugin takes. */
const answer = (description: string, content: Record<string, TSchema>, headers?: Record<string, unknown>): TSchema =>
  ({
    description,
    content: Object.fromEntries(Object.entries(content).map(([type, schema]) => [type, { schema }])),
    ...(headers === undefined ? {} : { headers }),
  }) as unknown as TSchema;

const errorAnswer = (description: string): TSchema =>
  answer(description, { 'application/did-resolution': ResolutionResultSchema, 'application/did-url-dereferencing': DereferencingResultSchema });

/** Every status `GET /1.0/identifiers/{did}` answers, per W3C's HTTP(S) binding. */
export const IDENTIFIERS_RESPONSES: Record<number, TSchema> = {
  200: answer('the resolution result, the document, or what the DID URL selects', {
    'application/did-resolution': ResolvedResultSchema,
    'application/did+json': Type.Union([W3cDidDocumentSchema, VerificationMethodSchema, ServiceSchema]),
    'application/did+ld+json': Type.Union([W3cDidDocumentSchema, VerificationMethodSchema, ServiceSchema]),
    'application/did-url-dereferencing': DereferencingResultSchema,
  }),
  303: answer(
    '`?service=`: the selected service endpoint in `Location`; empty body',
    { 'text/uri-list': Type.String({ maxLength: 0 }) },
    {
      Location: { schema: { type: 'string' }, description: 'the service endpoint (with relativeRef appended)' },
    },
  ),
  400: errorAnswer('INVALID_DID, INVALID_DID_URL or INVALID_OPTIONS'),
  404: errorAnswer('NOT_FOUND: never registered, no such version, nothing with that fragment or service'),
  406: errorAnswer('REPRESENTATION_NOT_SUPPORTED'),
  410: answer('deactivated (the document with `deactivated: true`) or deleted (no document)', {
    'application/did-resolution': ResolutionResultSchema,
    'application/did+json': W3cDidDocumentSchema,
    'application/did+ld+json': W3cDidDocumentSchema,
    'application/did-url-dereferencing': DereferencingResultSchema,
  }),
  500: errorAnswer('INTERNAL_ERROR'),
  501: errorAnswer('METHOD_NOT_SUPPORTED: a DID method this network does not serve'),
};

/** `?versionId=&versionTime=&service=&relativeRef=`. */
export const IdentifiersQuerySchema = Type.Object({
  versionId: Type.Optional(Type.String({ pattern: '^[1-9][0-9]*$', description: 'a record version' })),
  versionTime: Type.Optional(XmlDateTime),
  service: Type.Optional(Type.String({ description: 'the fragment of a service id' })),
  relativeRef: Type.Optional(Type.String({ description: 'appended to the service endpoint (with service)' })),
});
