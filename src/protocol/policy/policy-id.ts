/** `policy_id` v2 and v3 (ledger-rules.md §7.2). */
import { concatBytes, to0x, utf8 } from '../../base/bytes.js';
import { blake2_256 } from '../../crypto/hash.js';
import type { Profile } from '../profile.js';
import { encodeScope } from './codec.js';
import type { PolicyScopeV2, PolicyScopeV3 } from './types.js';

/** `blake2_256(ASCII "<p>:delivery-policy:v2:" ‖ SCALE(PolicyScopeV2))`. */
export function policyIdV2(profile: Profile, scope: PolicyScopeV2): Uint8Array {
  return blake2_256(concatBytes(utf8(profile.policyIdPrefixV2), encodeScope(scope)));
}

/** `blake2_256(ASCII "<p>:delivery-policy:v3:" ‖ SCALE(PolicyScopeV3))`. */
export function policyIdV3(profile: Profile, scope: PolicyScopeV3): Uint8Array {
  return blake2_256(concatBytes(utf8(profile.policyIdPrefixV3), encodeScope(scope)));
}

/** The `0x` rendering used by the HTTP layer. */
export function policyIdHex(id: Uint8Array): string {
  return to0x(id);
}
