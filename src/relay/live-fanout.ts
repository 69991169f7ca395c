/**
 * The live-push fan-out (http-api.md §10.7–§10.8): how an envelope the Relay has durably stored reaches the live
 * WebSocket sessions of its recipient — on this process only (one node, SQLite), or on every Relay process
 * sharing one PostgreSQL database (`--db`, src/store/postgres/live-fanout.ts).
 *
 * Contract of every implementation:
 * - the caller has already decided the envelope is eligible (base-delivery.ts `isLivePushEligible`, only after
 *   the durable store, unchunked, `to` equal to the DID); a fan-out never re-checks and never stores a copy the
 *   recipient depends on — it is notification-grade, the Cache copy remains;
 * - the origin process pushes to its own sessions directly, exactly once; other processes push to theirs when
 *   told, and skip announcements that came from themselves (by a per-process id);
 * - `push` resolves with what it reached on THIS process — sessions, and of those the authenticated ones (what the
 *   DeliveryResult reports as `details.live_sessions` and decides `delivered` by; sessions on other processes are
 *   not counted: their receipt is never known here), and never rejects: a failed announcement is logged and costs
 *   only the remote notification;
 * - `pushElsewhere` is for a recipient with no Cache service and no session here (executor.ts): the envelope is
 *   pushed only to the processes known to hold a session of the DID, each of which answers with what it reached,
 *   and it resolves with their sum — no reach when none holds one, none answered in time, or there are no other
 *   processes. It never rejects either.
 */
import type { LivePush } from './executor.js';
import { NO_REACH, type LiveReach } from './live-sessions.js';

/** The sessions of this process a fan-out delivers to (implemented by {@link LiveSessions}). */
export interface LocalLiveSessions {
  /** Sends the bare envelope text to every open session of `did` here; returns what it reached. */
  push(did: string, envelopeJson: string): LiveReach;
  /** How many sessions of `did` are open here. */
  count(did: string): number;
  /** The DIDs with an open session here. */
  dids(): Iterable<string>;
  /** Calls `changed(did)` from now on when `did`'s first session opens here and when its last one goes. */
  watch(changed: (did: string) => void): void;
}

/** Sends an eligible, durably stored envelope to every live session of its recipient that the fan-out reaches. */
export interface LiveFanout extends LivePush {
  /** Pushes locally and announces to the other processes; resolves with the local reach. Never rejects. */
  push(did: string, envelopeJson: string): Promise<LiveReach>;
  /** Stops announcing and listening (pending announcements finish first). */
  close(): Promise<void>;
}

/** Builds the fan-out over this process's sessions (the Relay role creates its sessions, then its fan-out). */
export type LiveFanoutFactory = (sessions: LocalLiveSessions) => LiveFanout;

/** Today's behaviour: only the sessions held by this process. */
export class InProcessLiveFanout implements LiveFanout {
  constructor(private readonly sessions: LocalLiveSessions) {}

  push(did: string, envelopeJson: string): Promise<LiveReach> {
    return Promise.resolve(this.sessions.push(did, envelopeJson));
  }

  count(did: string): number {
    return this.sessions.count(did);
  }

  pushElsewhere(): Promise<LiveReach> {
    return Promise.resolve(NO_REACH);
  }

  async close(): Promise<void> {}
}
