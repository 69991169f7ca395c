/**
 * The error body of http-api.md §0.6, which every role answers a refusal with (the Relay's `POST /relay` answers a
 * DeliveryResult instead): the routes declare it (OpenAPI), `src/http/error-body.ts` builds it, the SDK and the
 * Relay's Cache client read it.
 */
import { Type, type Static } from 'typebox';

export const ErrorBodySchema = Type.Object(
  {
    code: Type.String({ description: 'Stable error code (src/base/errors.ts)' }),
    error: Type.String({ description: 'Identical to `code`; deployed clients read `error`' }),
    message: Type.String(),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { title: 'Error' },
);
/** The §0.6 error body as a node sends it. */
export type ErrorBody = Static<typeof ErrorBodySchema>;

/**
 * An error body as a reader receives it from a node it does not control: `code` (or only `error`, from older
 * nodes) and the rest when present.
 */
export type ReceivedErrorBody = Partial<ErrorBody>;

/** `v` read as a {@link ReceivedErrorBody}: its members of the right type, the others dropped; null when `v` is no JSON object. */
export function receivedErrorBody(v: unknown): ReceivedErrorBody | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  const out: ReceivedErrorBody = {};
  if (typeof o.code === 'string') out.code = o.code;
  if (typeof o.error === 'string') out.error = o.error;
  if (typeof o.message === 'string') out.message = o.message;
  const d = o.details;
  if (typeof d === 'object' && d !== null && !Array.isArray(d)) out.details = d as Record<string, unknown>;
  return out;
}
