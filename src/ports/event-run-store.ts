/**
 * The durable "at most once" record of event processing (http-api.md §10.9): one row per (event, message_id,
 * policy_id, rule_id), claimed before the rule's steps run, so a restart or a second delivery of the same
 * event never runs them again. Implemented in src/store/sqlite/event-run-store.ts.
 */

/** Claims event runs. */
export interface EventRunStore {
  /**
   * True the first time (event, message id, policy id, rule id) is claimed, false ever after (until it is
   * forgotten, once `forgetAfterMs` passed); settles once the claim is on stable storage (rejects when it could not
   * be stored).
   */
  claim(event: string, messageId: string, policyId: string, ruleId: string, nowMs: number, forgetAfterMs: number): Promise<boolean>;
  /**
   * Forgets at most `limit` claims whose `forgetAfterMs` is not after `nowMs` (their events cannot happen again);
   * resolves with how many.
   */
  forgetExpired(nowMs: number, limit: number): Promise<number>;
  close(): Promise<void>;
}
