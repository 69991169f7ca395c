/** Rule conditions and tags (ledger-rules.md §7.4): write-time checks and matching. */
import { utf8Length } from '../../base/bytes.js';
import type { PolicyCondition, PolicyEvent, PolicyRule } from '../../protocol/policy/types.js';
import { failer } from '../errors.js';
import { didExists } from '../records.js';
import type { StateReader } from '../state.js';

const fail = failer('DeliveryPolicy');

export const MAX_TAG_BYTES = 96;
const CC_RE = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE_RE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** `validate_tag`: non-empty, valid UTF-8, no Unicode Cc character, at most 96 bytes. */
export function isValidTag(tag: string): boolean {
  return tag.length > 0 && !CC_RE.test(tag) && !LONE_SURROGATE_RE.test(tag) && utf8Length(tag) <= MAX_TAG_BYTES;
}

/**
 * Write-time check of one condition: tags valid (`InvalidTag`), recipients active DIDs, `RecipientIn` non-empty
 * (`InvalidCondition`); `EventEquals` only when `allowEvent` (v3), else `InvalidCondition`.
 */
export function validateCondition(s: StateReader, c: PolicyCondition, allowEvent: boolean): void {
  switch (c.kind) {
    case 'TagEquals':
    case 'TagPrefix':
      if (!isValidTag(c.tag)) fail('InvalidTag');
      return;
    case 'TagAbsent':
      return;
    case 'RecipientEquals':
      if (!didExists(s, c.did)) fail('InvalidCondition');
      return;
    case 'RecipientIn':
      if (c.dids.length === 0 || !c.dids.every((d) => didExists(s, d))) fail('InvalidCondition');
      return;
    case 'EventEquals':
      if (!allowEvent) fail('InvalidCondition');
      return;
  }
}

/** What a rule is matched against: the recipient DID, the envelope tag, and the event (null during delivery). */
export interface MatchInput {
  recipient: string;
  tag: string | null;
  event: PolicyEvent | null;
}

/** Whether one condition matches (tags byte for byte, case-sensitive; `EventEquals` only for its event). */
export function conditionMatches(c: PolicyCondition, input: MatchInput): boolean {
  switch (c.kind) {
    case 'TagEquals':
      return input.tag !== null && input.tag === c.tag;
    case 'TagPrefix':
      // Both are well-formed strings, so a code-unit prefix is exactly a UTF-8 byte prefix.
      return input.tag !== null && input.tag.startsWith(c.tag);
    case 'TagAbsent':
      return input.tag === null;
    case 'RecipientEquals':
      return input.recipient === c.did;
    case 'RecipientIn':
      return c.dids.includes(input.recipient);
    case 'EventEquals':
      return input.event !== null && input.event === c.event;
  }
}

/** A rule is eligible when all its conditions match (no conditions: always). */
export function ruleMatches(rule: PolicyRule, input: MatchInput): boolean {
  return rule.conditions.every((c) => conditionMatches(c, input));
}

/**
 * The winning rule (§7.10 step 6): eligible rules in stored order; a later one wins only with a strictly greater
 * priority, so ties keep the earliest. Null when none is eligible.
 */
export function winningRule(ruleset: readonly PolicyRule[], input: MatchInput): PolicyRule | null {
  let winner: PolicyRule | null = null;
  for (const rule of ruleset) {
    if (!ruleMatches(rule, input)) continue;
    if (winner === null || rule.priority > winner.priority) winner = rule;
  }
  return winner;
}
