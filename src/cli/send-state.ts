/**
 * The small state file that makes `ddn send` resumable: per transfer (the file's SHA-256, the recipient, the Relay
 * and every option that shapes the envelopes) a transfer secret, the envelope timestamp, and how many envelopes the
 * Relay confirmed. Re-running the same command derives the same group id, message ids and ciphertexts from it
 * (client/send-keys.ts), skips what the Relay already staged and sends the rest. Files live in
 * `$XDG_STATE_HOME/ddn/sends` (default `~/.local/state/ddn/sends`), mode 0600; a finished send removes its file.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseHex, toHex } from '../base/bytes.js';
import { newTransferSecret } from '../client/send-keys.js';
import type { DeliveryResult } from '../client/transfer-types.js';
import { ddnStateDir } from './state-dir.js';

/** Margin kept before the Relay's staging deadline: a set that close to being purged is started over. */
const DEADLINE_MARGIN_MS = 60_000;
/** How long a state without a known deadline is trusted (the default staging window). */
const DEFAULT_WINDOW_MS = 3_600_000;

/** What is saved between runs. */
export interface SendState {
  version: 1;
  secret_hex: string;
  timestamp: string;
  created_at: string;
  /** Envelopes 0 … confirmed − 1 were accepted by the Relay. */
  confirmed: number;
  total: number | null;
  /** The Relay's staging deadline of the set (`details.retry_until` of a `chunk_staged` answer). */
  retry_until: string | null;
}

/** The directory holding send state files. */
export function sendStateDir(env: NodeJS.ProcessEnv): string {
  return join(ddnStateDir(env), 'sends');
}

/** The state file name of one transfer: a hash of everything that makes the envelopes what they are. */
export function sendStateKey(parts: readonly (string | number | boolean | null | undefined)[]): string {
  return createHash('sha256')
    .update(JSON.stringify(parts.map((p) => p ?? null)))
    .digest('hex')
    .slice(0, 32);
}

function usable(s: unknown, nowMs: number): s is SendState {
  if (typeof s !== 'object' || s === null) return false;
  const v = s as Partial<SendState>;
  if (v.version !== 1 || typeof v.secret_hex !== 'string' || parseHex(v.secret_hex)?.length !== 32) return false;
  if (typeof v.timestamp !== 'string' || typeof v.created_at !== 'string' || !Number.isSafeInteger(v.confirmed)) return false;
  const deadline = typeof v.retry_until === 'string' ? Date.parse(v.retry_until) : Date.parse(v.created_at) + DEFAULT_WINDOW_MS;
  return Number.isFinite(deadline) && deadline - DEADLINE_MARGIN_MS > nowMs;
}

/** One transfer's state file. */
export class SendStateFile {
  readonly path: string;
  /** The state in use: loaded from an earlier run, or new. */
  readonly state: SendState;
  /** True when an earlier run's state was found and is still usable. */
  readonly resumed: boolean;

  constructor(dir: string, key: string, nowMs: number, restart = false) {
    this.path = join(dir, `${key}.json`);
    let saved: unknown;
    try {
      saved = restart ? undefined : JSON.parse(readFileSync(this.path, 'utf8'));
    } catch {
      saved = undefined;
    }
    this.resumed = usable(saved, nowMs);
    this.state = this.resumed
      ? (saved as SendState)
      : {
          version: 1,
          secret_hex: toHex(newTransferSecret()),
          timestamp: new Date(nowMs).toISOString(),
          created_at: new Date(nowMs).toISOString(),
          confirmed: 0,
          total: null,
          retry_until: null,
        };
  }

  get secret(): Uint8Array {
    return parseHex(this.state.secret_hex)!;
  }

  /** Records the Relay's acceptance of envelope `sequence` and saves the file. */
  posted(sequence: number, result: DeliveryResult): void {
    const s = this.state;
    if (sequence === s.confirmed) s.confirmed = sequence + 1;
    const total = result.details?.expected_chunks;
    if (typeof total === 'number') s.total = total;
    const until = result.details?.retry_until;
    if (typeof until === 'string' && s.retry_until === null) s.retry_until = until;
    this.save();
  }

  save(): void {
    mkdirSync(join(this.path, '..'), { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(this.state)}\n`, { mode: 0o600 });
    renameSync(tmp, this.path);
  }

  /** The transfer is complete: nothing left to resume. */
  remove(): void {
    rmSync(this.path, { force: true });
  }
}
