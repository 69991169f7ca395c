/** Duration text (http-api.md §10.1.1) and the ISO-8601 duration form of responses (§11.1). */

export const MIN_TTL_SECONDS = 1;
export const MAX_TTL_SECONDS = 315_360_000;

const COMPACT_RE = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/i;
const ISO_WEEKS_RE = /^P(\d+)W$/i;
const ISO_RE = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/i;

function sum(parts: (string | undefined)[], units: number[]): number | undefined {
  let total = 0;
  let any = false;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if (p === undefined) continue;
    any = true;
    total += Number(p) * units[i]!;
  }
  return any ? total : undefined;
}

/** Parses a ttl: compact units (`1h30m`), bare seconds, or ISO-8601 (`PT24H`, `P2W`). Undefined when invalid. */
export function parseDurationSeconds(text: string): number | undefined {
  let secs: number | undefined;
  if (/^\d+$/.test(text)) secs = Number(text);
  else if (text.length > 0 && COMPACT_RE.test(text)) {
    const m = COMPACT_RE.exec(text)!;
    secs = sum([m[1], m[2], m[3], m[4]], [86_400, 3_600, 60, 1]);
  } else if (ISO_WEEKS_RE.test(text)) {
    secs = Number(ISO_WEEKS_RE.exec(text)![1]) * 604_800;
  } else if (ISO_RE.test(text) && !/T$/i.test(text)) {
    const m = ISO_RE.exec(text)!;
    secs = sum([m[1], m[2], m[3], m[4]], [86_400, 3_600, 60, 1]);
  }
  if (secs === undefined || !Number.isSafeInteger(secs) || secs < MIN_TTL_SECONDS || secs > MAX_TTL_SECONDS) return undefined;
  return secs;
}

/** `PT` + hours `H` + minutes `M` + seconds `S`, zero components omitted, `PT0S` for zero. */
export function formatIsoDuration(totalSeconds: number): string {
  const s = Math.max(0, Math.floor(totalSeconds));
  if (s === 0) return 'PT0S';
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return `PT${h ? `${h}H` : ''}${m ? `${m}M` : ''}${sec ? `${sec}S` : ''}`;
}
