/** Prometheus text exposition (what `GET /metrics` answers), summed per metric name across its labels. */

/** `name → sum of every sample's value` (histogram `_bucket` lines included under their own names). */
export function sumByName(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)/.exec(line);
    if (m === null) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    out.set(m[1]!, (out.get(m[1]!) ?? 0) + value);
  }
  return out;
}
