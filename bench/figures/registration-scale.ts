/**
 * The registration figures of `resolve_scale` (issue 39 item 3; orchestrated by bench/figures/resolve-scale.ts): the
 * rate of fresh signed `POST /register-did` at the big node ÷ at the 2,000-DID node, twice — just after the start
 * (`registration_at_scale_cold`, information) and, the target line, once the registration path of both nodes has
 * been warmed (`registration_at_scale`: a node that has been registering for a while). The pure parts: how many
 * registrations a window signs, how many warm the big node, and the two figures.
 */
import type { Figure } from '../context.js';
import type { LoadResult } from '../jobs.js';
import type { BlockedColumns, ProcessMemory } from '../proc.js';

/**
 * Registrations a second a window is signed for: well above the fastest window measured (5,312/s, the 2k node in
 * session 35's whole run, a fast hour, which used up the 5,000/s signed then), so a window never uses them up (it
 * would resend the last one, answered 409, and the figure would be unavailable). Signing costs the load generator
 * ~150 µs of CPU each, before the window starts.
 */
export const SIGNED_PER_S = 8_000;

/** The registrations a window of `warmupS` + `durationS` seconds signs beforehand. */
export function registrationsToSign(warmupS: number, durationS: number): number {
  return Math.ceil((warmupS + durationS) * SIGNED_PER_S);
}

/**
 * DIDs per leaf of the largest index a registration inserts into at random (`ledger_current`'s key index: 12,920
 * leaves of 4 KiB at 1,000,000 DIDs, a ledger built by bench/bigledger.ts — `dbstat`; `ledger_txs_hash_key` 4,541).
 * Measured in session 31 (bench/HISTORY.md); since session 49 a registration no longer enters `ledger_txs_history`
 * (13,376 leaves then), which its DID's record finds (src/store/sqlite/ledger-history.ts).
 */
export const DIDS_PER_INDEX_LEAF = 77;

/**
 * Registrations the big node accepts before its measured window: `n` random inserts into an index of `L` leaves
 * leave about `e^(−n/L)` of its leaves never read, so `5 L` leaves under 1 % of them (0.7 %) to be read from the
 * disk in the measured window — the big node's SQLite cache then holds the leaves, as a node's that has been
 * registering for a while does.
 */
export function warmupRegistrations(bigDids: number): number {
  return Math.ceil((5 * bigDids) / DIDS_PER_INDEX_LEAF);
}

/** One registration window: the load generator's result and the node's blocked time and disk bytes beside it. */
export interface RegistrationWindow {
  load: LoadResult;
  blocked: BlockedColumns;
}

/** A small window and a big one, taken one after the other. */
export interface RegistrationPair {
  small: RegistrationWindow;
  big: RegistrationWindow;
}

/** What ran between the cold pair and the warm pair to warm the registration path. */
export interface RegistrationWarmup {
  /** Registrations the big node was to accept first ({@link warmupRegistrations}). */
  target: number;
  /** Windows per node. */
  windows: number;
  /** Registrations accepted in the warm-up windows' measured parts (their own 2-s warm-ups add more): big, small. */
  big: number;
  small: number;
  /** Each warm-up window's rate, registrations a second, in order. */
  bigRates: number[];
  smallRates: number[];
  /** DIDs each ledger held at least when its measured window started (built + every window's accepted ones). */
  bigDids: number;
  smallDids: number;
}

/**
 * The figure's value, or why there is none: a window that met an answer other than `2xx` measured something else —
 * most often it used up its pre-signed registrations and resent the last one (`409`).
 */
export function registrationsAnswered(small: LoadResult, big: LoadResult): Pick<Figure, 'value' | 'unavailable'> {
  const refused = small.non2xx + big.non2xx;
  if (refused === 0) return { value: big.rate };
  return { value: null, unavailable: `${refused} registrations answered other than 2xx (2k ${small.non2xx}, big ${big.non2xx}): pre-sign more` };
}

function columns(p: RegistrationPair): Record<string, number> {
  return {
    small_req_per_s: p.small.load.rate,
    non2xx: p.big.load.non2xx,
    small_non2xx: p.small.load.non2xx,
    // per registration: the event loop off a CPU and out of the run queue (a read from the disk, an fsync, or idle),
    // what the disk read for the node and what it dirtied (bench/HISTORY.md, session 27)
    ...p.big.blocked,
    small_main_cpu_us: p.small.blocked.main_cpu_us,
    small_blocked_us: p.small.blocked.blocked_us,
    small_disk_read_kib: p.small.blocked.disk_read_kib,
    small_dirtied_kib: p.small.blocked.dirtied_kib,
  };
}

/**
 * `registration_at_scale` (target ≥ 0.95: not lower, within the bench's noise) from the pair after the warm-up, and
 * `registration_at_scale_cold` (information, no target) from the first pair after the start.
 */
export function registrationFigures(r: {
  label: string;
  cold: RegistrationPair;
  warm: RegistrationPair;
  warmup: RegistrationWarmup;
  memCold: ProcessMemory;
  memWarm: ProcessMemory;
}): Figure[] {
  const { cold, warm, warmup: w } = r;
  return [
    {
      id: 'registration_at_scale',
      title: `Registrations accepted with ${r.label} DIDs, both nodes registering for a while (reference: a node started with 2,000)`,
      ...registrationsAnswered(warm.small.load, warm.big.load),
      unit: 'req/s',
      reference: 'same_run_line',
      referenceValue: warm.small.load.rate,
      target: { op: '>=', ratio: 0.95 },
      extra: {
        ...columns(warm),
        warmup_target: w.target,
        warmup_windows: w.windows,
        warmup_registrations: w.big,
        small_warmup_registrations: w.small,
        dids_at_least: w.bigDids,
        small_dids_at_least: w.smallDids,
        ...r.memWarm,
      },
      load: warm.big.load,
      details: { small: warm.small.load, warmup: w },
    },
    {
      id: 'registration_at_scale_cold',
      title: `Registrations accepted with ${r.label} DIDs, the first window after the start (reference: with 2,000; information)`,
      ...registrationsAnswered(cold.small.load, cold.big.load),
      unit: 'req/s',
      reference: 'same_run_line',
      referenceValue: cold.small.load.rate,
      extra: { ...columns(cold), ...r.memCold },
      load: cold.big.load,
      details: { small: cold.small.load },
    },
  ];
}
