/**
 * The DNS check of a persona challenge (http-api.md §7.3): the TXT record set at `record_name` must contain a
 * record whose concatenated character-strings equal `record_value` exactly. Lookups go through node:dns's
 * c-ares resolver, optionally pointed at configured servers (`host` or `host:port`).
 */
import { Resolver } from 'node:dns/promises';

/** Resolves the TXT records of a name: one array of character-strings per record. */
export type TxtLookup = (name: string) => Promise<string[][]>;

export type DnsFailureReason = 'record_missing' | 'record_mismatch' | 'lookup_failed';

export type DnsCheck = { ok: true } | { ok: false; reason: DnsFailureReason; dnsError?: string };

export interface TxtResolverOptions {
  /** Servers as `ip`, `ip:port` or `[ipv6]:port`; the system's servers when absent or empty. */
  servers?: readonly string[];
  /** Per-attempt timeout (c-ares `timeout`); default 3000 ms, 2 tries — well inside clients' 20 s budget. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 3_000;

/** A TXT lookup over a dedicated c-ares resolver. */
export function createTxtLookup(opts: TxtResolverOptions = {}): TxtLookup {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, tries: 2 });
  if (opts.servers && opts.servers.length > 0) resolver.setServers([...opts.servers]);
  return (name) => resolver.resolveTxt(name);
}

/** Error codes of a name that exists without TXT records, or does not exist at all. */
const MISSING_CODES = new Set(['ENOTFOUND', 'ENODATA']);

/** Looks the record up and compares; never throws. */
export async function checkTxtRecord(lookup: TxtLookup, recordName: string, recordValue: string): Promise<DnsCheck> {
  let records: string[][];
  try {
    records = await lookup(recordName);
  } catch (e) {
    const code = typeof (e as { code?: unknown }).code === 'string' ? (e as { code: string }).code : 'EUNKNOWN';
    return { ok: false, reason: MISSING_CODES.has(code) ? 'record_missing' : 'lookup_failed', dnsError: code };
  }
  if (records.length === 0) return { ok: false, reason: 'record_missing' };
  return records.some((chunks) => chunks.join('') === recordValue) ? { ok: true } : { ok: false, reason: 'record_mismatch' };
}
