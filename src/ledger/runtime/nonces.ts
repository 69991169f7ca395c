/**
 * Next-usable nonce readers of the policy, persona and application modules (ledger-rules.md §6). Over the pool
 * state they answer the nonce routes; absent means 0.
 */
import { getNonce } from '../records.js';
import type { StateReader } from '../state.js';

/** `policy_nonce`: v2 writes of `operatorDid` (persona-scoped v2 writes use the operator's value). */
export const policyNonce = (s: StateReader, operatorDid: string): bigint => getNonce(s, 'policy_nonce', operatorDid);

/** `policy_v3_nonce` ("owner nonce"): v3 writes owned by `ownerDid`. */
export const policyV3Nonce = (s: StateReader, ownerDid: string): bigint => getNonce(s, 'policy_v3_nonce', ownerDid);

/** `operator_nonce`: every persona operation signed by `operatorDid`. */
export const operatorNonce = (s: StateReader, operatorDid: string): bigint => getNonce(s, 'operator_nonce', operatorDid);

/** `persona_nonce` = the next `challenge_nonce` of the canonical persona name (never removed). */
export const personaNonce = (s: StateReader, persona: string): bigint => getNonce(s, 'persona_nonce', persona);

/** `application_nonce`: application authorizations of `controlDid` (never removed). */
export const applicationNonce = (s: StateReader, controlDid: string): bigint => getNonce(s, 'application_nonce', controlDid);
