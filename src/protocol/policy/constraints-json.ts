/**
 * JSON forms of constraints (http-api.md §8.1): the `delivery_constraints` request object and rule
 * `constraint_overrides`. The deprecated `max_message_bytes` / `max_chunks` are accepted, ignored by the ledger,
 * and never emitted.
 */
import { FieldReader, has, join, type JsonRecord } from './json-fields.js';
import type { DeliveryConstraintOverrides, RequestedDeliveryConstraints } from './types.js';
import type { ConstraintsJson } from '../constraints.js';

const U32_MAX = 4_294_967_295;
const U16_MAX = 65_535;
const U8_MAX = 255;

const constraintsReader = new FieldReader('invalid_delivery_constraints');
const policyReader = new FieldReader('invalid_delivery_policy');

/**
 * Parses a `delivery_constraints` object: the five limits are required positive integers (their wire types'
 * ranges); `max_message_bytes` and `max_chunks` are optional (maxima when absent); `effective_ttl_seconds` is
 * response-only and refused; other keys are ignored (Directory default). Errors: 400 `invalid_delivery_constraints`.
 */
export function parseRequestedConstraintsJson(v: unknown, field = 'delivery_constraints'): RequestedDeliveryConstraints {
  const r = constraintsReader;
  const o = r.object(v, field);
  if (has(o, 'effective_ttl_seconds')) {
    r.fail(join(field, 'effective_ttl_seconds'), 'response_only_field', 'effective_ttl_seconds must be omitted in requests');
  }
  const req = (key: string, max: number): number => {
    if (!has(o, key)) return r.fail(join(field, key), 'missing_field', `${join(field, key)} is required`);
    return r.integer(o[key], join(field, key), 1, max);
  };
  const opt = (key: string, max: number): number => (has(o, key) && o[key] !== null ? r.integer(o[key], join(field, key), 0, max) : max);
  return {
    requestedCacheSeconds: req('requested_cache_seconds', U32_MAX),
    maxHttpEnvelopeBytes: req('max_http_envelope_bytes', U32_MAX),
    maxUnchunkedMessageBytes: req('max_unchunked_message_bytes', U32_MAX),
    maxChunkBytes: req('max_chunk_bytes', U32_MAX),
    maxMessageBytes: opt('max_message_bytes', U32_MAX),
    maxChunks: opt('max_chunks', U16_MAX),
    maxReplicas: req('max_replicas', U8_MAX),
  };
}

/** The request form of requested constraints (deprecated fields omitted). */
export function requestedConstraintsToJson(c: RequestedDeliveryConstraints): Omit<ConstraintsJson, 'effective_ttl_seconds'> {
  return {
    requested_cache_seconds: c.requestedCacheSeconds,
    max_http_envelope_bytes: c.maxHttpEnvelopeBytes,
    max_unchunked_message_bytes: c.maxUnchunkedMessageBytes,
    max_chunk_bytes: c.maxChunkBytes,
    max_replicas: c.maxReplicas,
  };
}

const OVERRIDE_KEYS = [
  ['requested_cache_seconds', 'requestedCacheSeconds', U32_MAX],
  ['max_http_envelope_bytes', 'maxHttpEnvelopeBytes', U32_MAX],
  ['max_unchunked_message_bytes', 'maxUnchunkedMessageBytes', U32_MAX],
  ['max_chunk_bytes', 'maxChunkBytes', U32_MAX],
  ['max_message_bytes', 'maxMessageBytes', U32_MAX],
  ['max_chunks', 'maxChunks', U16_MAX],
  ['max_replicas', 'maxReplicas', U8_MAX],
] as const;

/**
 * `constraint_overrides`: absent or null → None; an object (even `{}`) → Some, each listed key an integer of its
 * wire type (null or absent → None). Whether a value narrows the scope is the ledger's check
 * (`ConstraintOverrideExceedsScope`). Errors: 400 `invalid_delivery_policy`.
 */
export function parseOverridesJson(v: unknown, field: string): DeliveryConstraintOverrides | null {
  if (v === undefined || v === null) return null;
  const o = policyReader.object(
    v,
    field,
    OVERRIDE_KEYS.map(([k]) => k),
  );
  const out: DeliveryConstraintOverrides = {
    requestedCacheSeconds: null,
    maxHttpEnvelopeBytes: null,
    maxUnchunkedMessageBytes: null,
    maxChunkBytes: null,
    maxMessageBytes: null,
    maxChunks: null,
    maxReplicas: null,
  };
  for (const [key, prop, max] of OVERRIDE_KEYS) {
    if (has(o, key) && o[key] !== null) out[prop] = policyReader.integer(o[key], join(field, key), 0, max);
  }
  return out;
}

/** The JSON of Some(overrides): the non-deprecated keys that are Some. */
export function overridesToJson(o: DeliveryConstraintOverrides): JsonRecord {
  const out: JsonRecord = {};
  for (const [key, prop] of OVERRIDE_KEYS) {
    if (prop === 'maxMessageBytes' || prop === 'maxChunks') continue;
    if (o[prop] !== null) out[key] = o[prop];
  }
  return out;
}
