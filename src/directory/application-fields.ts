/**
 * Application request fields shared by the application reads and change kinds (http-api.md §9): ids, the JSON
 * integer nonce, the hex-only payload, statuses, and the 409 `application_proof_stale` of a stale proof.
 */
import { bytesEqual, parseHex } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import { jsonInteger } from './submission.js';
import { decodeApplicationAuthorization, isAddressableApplicationId, isApplicationId, type ApplicationStatus } from '../protocol/payloads/application.js';

/** Application call arguments bound `signer_key_id` to 96 bytes (ledger-rules.md §10). */
export const SIGNER_KEY_ID_BYTES = 96;

export const STATUS_BY_NAME: Record<string, ApplicationStatus> = { active: 'Active', suspended: 'Suspended', tombstoned: 'Tombstoned' };
const STATUS_NAMES = { Active: 'active', Suspended: 'suspended', Tombstoned: 'tombstoned' } as const satisfies Record<ApplicationStatus, string>;

/** A status as the wire writes it (lower case). */
export const statusName = (s: ApplicationStatus): (typeof STATUS_NAMES)[ApplicationStatus] => STATUS_NAMES[s];

export function assertApplicationId(id: string): void {
  if (!isApplicationId(id)) throw new DdnError('invalid_application_id', 'application id must be 1–64 characters of [a-z0-9._-]', { application_id: id });
}

/** Registration refuses ids no HTTP client can address (`.`, `..`): 400 `invalid_application_id`. */
export function assertRegistrableApplicationId(id: string): void {
  assertApplicationId(id);
  if (!isAddressableApplicationId(id)) {
    throw new DdnError('invalid_application_id', 'application id must not be a dot segment (. or ..): HTTP clients cannot address it', {
      application_id: id,
      reason: 'unaddressable',
    });
  }
}

/** Application `nonce`: a JSON integer (product spec), else 400 `invalid_nonce`. */
export function parseIntegerNonce(v: unknown): bigint {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  throw new DdnError('invalid_nonce', 'nonce must be a JSON integer', { field: 'nonce' });
}

/** `canonical_payload` on application routes: `0x`-hex only, strictly decoding as an application tuple. */
export function parseHexPayload(v: unknown): Uint8Array {
  const bytes = typeof v === 'string' && v.startsWith('0x') ? parseHex(v) : undefined;
  if (!bytes || bytes.length === 0 || !decodeApplicationAuthorization(bytes)) {
    throw new DdnError('invalid_canonical_payload', 'canonical_payload must be the 0x-hex application tuple', { field: 'canonical_payload' });
  }
  return bytes;
}

/** 409 `application_proof_stale`: the proof was built on another nonce or state. */
export function stale(message: string, details: Record<string, unknown> = {}): DdnError {
  return new DdnError('application_proof_stale', `${message}; prepare and sign again`, details);
}

/**
 * The submitted proof was built on the current nonce and state: the nonce is the control DID's current
 * `application_nonce` and `canonical_payload` equals the tuple rebuilt with it (`rebuiltNow`), else 409.
 */
export function assertCurrentProof(nonce: bigint, current: bigint, canonical: Uint8Array, rebuiltNow: () => Uint8Array, basis: 'nonce' | 'state'): void {
  if (nonce !== current) throw stale('nonce is not the current application nonce', { expected: jsonInteger(current), received: jsonInteger(nonce) });
  if (!bytesEqual(canonical, rebuiltNow())) throw stale(`canonical_payload differs from the payload rebuilt with the current ${basis}`);
}
