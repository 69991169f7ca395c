/**
 * Who gets a session of the export stream (docs/mirrors.md): a share of the sessions per client address, a cap on
 * all of them, and room kept for consumers that read. A consumer proves it reads by answering pings (WebSocket
 * clients answer them as they read); one whose ping has gone unanswered for `displaceAfterMs` gives its place to a
 * newcomer when there is no other room. Pure: `now` is a parameter.
 */

/** One session's place, as the rule sees it. */
export interface FeedStreamSlot {
  /** The client address it counts under (an IPv4 address, an IPv6 /64). */
  readonly address: string;
  /** When the oldest ping it has not answered was sent; undefined: it answered every ping. */
  awaitingPongSince: number | undefined;
}

export interface SlotLimits {
  /** Sessions of the stream at most. */
  maxSessions: number;
  /** Sessions of one client address at most. */
  maxSessionsPerAddress: number;
  /** A session whose ping has gone unanswered this long gives its place to a newcomer that finds no room. */
  displaceAfterMs: number;
}

export type SlotDecision<T> =
  /** Admitted; `displace`: the session that must give its place first. */
  | { admitted: true; displace?: T }
  /** Refused: every session (`stream`) or the address's share (`address`) is taken by consumers that read. */
  | { admitted: false; full: 'stream' | 'address' };

/** The session of `slots` that has kept a ping unanswered longest, if that is at least `displaceAfterMs`. */
function stalest<T extends FeedStreamSlot>(slots: Iterable<T>, now: number, displaceAfterMs: number): T | undefined {
  let found: T | undefined;
  for (const s of slots) {
    if (s.awaitingPongSince === undefined || now - s.awaitingPongSince < displaceAfterMs) continue;
    if (found === undefined || s.awaitingPongSince < found.awaitingPongSince!) found = s;
  }
  return found;
}

/** Whether a newcomer from `address` gets a session among `slots`, and whose place it takes. */
export function admitToStream<T extends FeedStreamSlot>(slots: readonly T[], address: string, now: number, limits: SlotLimits): SlotDecision<T> {
  const own = slots.filter((s) => s.address === address);
  if (own.length >= limits.maxSessionsPerAddress) {
    const displace = stalest(own, now, limits.displaceAfterMs);
    return displace === undefined ? { admitted: false, full: 'address' } : { admitted: true, displace };
  }
  if (slots.length >= limits.maxSessions) {
    const displace = stalest(slots, now, limits.displaceAfterMs);
    return displace === undefined ? { admitted: false, full: 'stream' } : { admitted: true, displace };
  }
  return { admitted: true };
}
