/** The Directory's public JSON routes, as the explorer reads them, and the explorer's own addresses. */

export type Json = Record<string, unknown>;

export interface Reply {
  status: number;
  body: Json;
}

const root = document.getElementById('app');
/** The Directory's base path ('' at the root) and the explorer's (`<base>/explorer`). */
export const API_BASE = root?.dataset.api ?? '';
export const EXPLORER_BASE = root?.dataset.base ?? '/explorer';

/** One path segment, percent-encoded except for `:` (DIDs stay readable in the address bar). */
export const seg = (s: string): string => encodeURIComponent(s).replace(/%3A/gi, ':');

/** An explorer address: `link('did', did)` → `/explorer/did/<did>`. */
export function link(...parts: (string | number)[]): string {
  return parts.length === 0 ? `${EXPLORER_BASE}/` : `${EXPLORER_BASE}/${parts.map((p) => seg(String(p))).join('/')}`;
}

/** GET a Directory route; network failures answer status 0. */
export async function getJson(path: string): Promise<Reply> {
  try {
    const res = await fetch(`${API_BASE}${path}`, { headers: { accept: 'application/json' } });
    const body = (await res.json().catch(() => ({}))) as Json;
    return { status: res.status, body };
  } catch (e) {
    return { status: 0, body: { code: 'network_error', message: String(e) } };
  }
}

export async function getText(path: string): Promise<{ status: number; text: string }> {
  try {
    const res = await fetch(`${API_BASE}${path}`);
    return { status: res.status, text: await res.text() };
  } catch (e) {
    return { status: 0, text: String(e) };
  }
}

/** Only http(s) URLs become links (a service endpoint is whatever its DID published). */
export function safeHref(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : undefined;
  } catch {
    return undefined;
  }
}

export const str = (v: unknown): string => (v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));
export const arr = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);
export const obj = (v: unknown): Json => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});

/** A Unix-ms time as `YYYY-MM-DD HH:MM:SS UTC`; `never` for an unset one (0, null or absent). */
export function timeText(ms: unknown): string {
  if (typeof ms !== 'number' || ms <= 0) return 'never';
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');
}

const SUBJECT_PAGES: Record<string, string> = { did: 'did', persona: 'persona', application: 'application' };

/** The explorer page of an operation's subject (`subject_kind` of the Directory's answers), if it has one. */
export function subjectLink(kind: unknown, id: unknown): string | undefined {
  const page = typeof kind === 'string' ? SUBJECT_PAGES[kind] : undefined;
  return page === undefined || typeof id !== 'string' || id === '' ? undefined : link(page, id);
}
