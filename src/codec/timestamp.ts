/** Envelope and proof timestamps (http-api.md §10.1.2): ISO-8601 with a zone, epoch ms or epoch s. */

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/;

/** Milliseconds since the epoch, or undefined when the value is not an accepted timestamp. */
export function parseTimestampMs(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? epochToMs(value) : undefined;
  if (typeof value !== 'string' || value.length === 0) return undefined;
  if (/^\d{1,16}$/.test(value)) return epochToMs(Number(value));
  const m = ISO_RE.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const ms = frac ? Number((frac + '00').slice(0, 3)) : 0;
  const base = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), ms);
  const check = new Date(base);
  if (
    check.getUTCFullYear() !== Number(y) ||
    check.getUTCMonth() !== Number(mo) - 1 ||
    check.getUTCDate() !== Number(d) ||
    Number(h) > 23 ||
    Number(mi) > 59 ||
    Number(s) > 59
  ) {
    return undefined;
  }
  let offsetMin = 0;
  if (zone !== 'Z') {
    const sign = zone!.startsWith('-') ? -1 : 1;
    const [oh, om] = zone!.slice(1).split(':').map(Number);
    if (oh! > 23 || om! > 59) return undefined;
    offsetMin = sign * (oh! * 60 + om!);
  }
  return base - offsetMin * 60_000;
}

function epochToMs(n: number): number {
  return n >= 100_000_000_000 ? n : n * 1000;
}
