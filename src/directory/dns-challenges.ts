/**
 * Persona DNS challenges (http-api.md §7.2–§7.4, §7.7): Directory storage, not ledger state. A challenge is
 * bound to (persona, operator DID, action), lives 48 h and moves `pending` → `verified` → `used`; verifying again
 * while not used replaces the verified intent. `expired` is derived from the clock, never stored.
 */
import type { RequestedDeliveryConstraints } from '../protocol/policy/types.js';

/** 48 h (§7.2). */
export const CHALLENGE_TTL_MS = 48 * 3_600_000;
/** Rows are kept this long after expiry (so a late client still gets 410, not 404), then purged. */
export const CHALLENGE_RETENTION_MS = 7 * 86_400_000;

export const CHALLENGE_ACTIONS = ['register_persona', 'renew_persona', 'transfer_persona'] as const;
export type ChallengeAction = (typeof CHALLENGE_ACTIONS)[number];

export type StoredChallengeStatus = 'pending' | 'verified' | 'used';
export type ChallengeStatus = StoredChallengeStatus | 'expired';

/** The persona operation a challenge action leads to (ledger-rules.md §4.9.1). */
export const OPERATION_OF: Record<ChallengeAction, 'Register' | 'Renew' | 'Transfer'> = {
  register_persona: 'Register',
  renew_persona: 'Renew',
  transfer_persona: 'Transfer',
};

/** What a successful verification fixed (§7.3): the intent and the Directory's outputs. u64 values are decimal. */
export interface VerifiedIntent {
  /** Operator nonce the intent was built with (for transfers: the current operator's). */
  nonce: string;
  validUntil: string;
  signerKeyId: string;
  /** Register and transfer: the (new) controller set; renew: the stored set at verification. */
  controllerKeys: string[];
  controllerThreshold: number;
  constraints: RequestedDeliveryConstraints | null;
  verificationDays: number;
  /** `0x` + 64 hex. */
  dnsProofHash: string;
  verificationExpiresAt: number;
  /** `0x` + 64 hex: the attestor's public key. */
  attestor: string;
  /** `0x` + 130 hex: `00` ‖ Ed25519 signature. */
  attestationSignature: string;
  /** Register / renew: the persona payload to be signed by the operator (`0x` hex). */
  canonicalPayload: string | null;
  /** Transfer: the acceptance payload to be signed by the new operator (`0x` hex). */
  acceptancePayload: string | null;
  verifiedAtMs: number;
}

export interface DnsChallenge {
  /** UUID v4. */
  id: string;
  persona: string;
  /** The bound operator (for transfers: the new operator). */
  operatorDid: string;
  action: ChallengeAction;
  /** Persona nonce when created (decimal). */
  challengeNonce: string;
  /** Operator nonce when created (for transfers: the current operator's), decimal. */
  operatorNonce: string;
  /** Transfers: the operator at creation. */
  currentOperatorDid: string | null;
  recordName: string;
  recordValue: string;
  createdAtMs: number;
  expiresAtMs: number;
  status: StoredChallengeStatus;
  intent: VerifiedIntent | null;
  usedTxHash: string | null;
}

/**
 * Where challenges live (SQLite: src/store/sqlite/dns-challenge-store.ts, PostgreSQL:
 * src/store/postgres/dns-challenge-store.ts). Asynchronous, so several Directory processes can share one
 * database; the status changes are single conditional writes, never read-then-write, so the single-use rule
 * holds across processes.
 */
export interface DnsChallengeStore {
  insert(c: DnsChallenge): Promise<void>;
  get(id: string): Promise<DnsChallenge | undefined>;
  /** Stores the verified intent unless the challenge is already used; false when it was. */
  markVerified(id: string, intent: VerifiedIntent): Promise<boolean>;
  /** Marks the challenge used by an accepted submission; false when it was already used (the first use stays). */
  markUsed(id: string, txHash: string): Promise<boolean>;
  /** Deletes challenges that expired before `ms`; returns how many. */
  purgeExpiredBefore(ms: number): Promise<number>;
}

/** The status a client sees: a challenge not used by its expiry is `expired`. */
export function challengeStatus(c: DnsChallenge, nowMs: number): ChallengeStatus {
  if (c.status !== 'used' && nowMs >= c.expiresAtMs) return 'expired';
  return c.status;
}
