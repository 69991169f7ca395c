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

/** Migration 1 of both stores (never edit it; a change is a new migration). `int`: the dialect's 64-bit integer type. */
export function dnsChallengeTableSql(int: 'INTEGER' | 'BIGINT'): string {
  return `
    CREATE TABLE directory_dns_challenges (
      id TEXT PRIMARY KEY, persona TEXT NOT NULL, operator_did TEXT NOT NULL, action TEXT NOT NULL,
      challenge_nonce TEXT NOT NULL, operator_nonce TEXT NOT NULL, current_operator_did TEXT,
      record_name TEXT NOT NULL, record_value TEXT NOT NULL, created_at_ms ${int} NOT NULL,
      expires_at_ms ${int} NOT NULL, status TEXT NOT NULL, intent TEXT, used_tx_hash TEXT);
    CREATE INDEX directory_dns_challenges_expiry ON directory_dns_challenges (expires_at_ms);
  `;
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
