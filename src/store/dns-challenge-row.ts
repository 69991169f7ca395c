/**
 * The `directory_dns_challenges` row as both stores (SQLite and PostgreSQL) write and read it: one column list,
 * one conversion each way. BIGINT columns arrive from PostgreSQL as strings, hence `Number()` on the way in.
 */
import type { DnsChallenge, VerifiedIntent } from '../directory/dns-challenges.js';

export interface DnsChallengeRow {
  id: string;
  persona: string;
  operator_did: string;
  action: string;
  challenge_nonce: string;
  operator_nonce: string;
  current_operator_did: string | null;
  record_name: string;
  record_value: string;
  created_at_ms: number | string;
  expires_at_ms: number | string;
  status: string;
  intent: string | null;
  used_tx_hash: string | null;
}

/** Column names in insert order. */
export const DNS_CHALLENGE_COLUMNS = [
  'id',
  'persona',
  'operator_did',
  'action',
  'challenge_nonce',
  'operator_nonce',
  'current_operator_did',
  'record_name',
  'record_value',
  'created_at_ms',
  'expires_at_ms',
  'status',
  'intent',
  'used_tx_hash',
] as const satisfies readonly (keyof DnsChallengeRow)[];

export function challengeToRow(c: DnsChallenge): DnsChallengeRow {
  return {
    id: c.id,
    persona: c.persona,
    operator_did: c.operatorDid,
    action: c.action,
    challenge_nonce: c.challengeNonce,
    operator_nonce: c.operatorNonce,
    current_operator_did: c.currentOperatorDid,
    record_name: c.recordName,
    record_value: c.recordValue,
    created_at_ms: c.createdAtMs,
    expires_at_ms: c.expiresAtMs,
    status: c.status,
    intent: c.intent === null ? null : JSON.stringify(c.intent),
    used_tx_hash: c.usedTxHash,
  };
}

export function challengeFromRow(r: DnsChallengeRow): DnsChallenge {
  return {
    id: r.id,
    persona: r.persona,
    operatorDid: r.operator_did,
    action: r.action as DnsChallenge['action'],
    challengeNonce: r.challenge_nonce,
    operatorNonce: r.operator_nonce,
    currentOperatorDid: r.current_operator_did,
    recordName: r.record_name,
    recordValue: r.record_value,
    createdAtMs: Number(r.created_at_ms),
    expiresAtMs: Number(r.expires_at_ms),
    status: r.status as DnsChallenge['status'],
    intent: r.intent === null ? null : (JSON.parse(r.intent) as VerifiedIntent),
    usedTxHash: r.used_tx_hash,
  };
}
