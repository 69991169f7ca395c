/**
 * The Directory's public JSON routes, as the explorer reads them, and the explorer's own addresses. Each read is
 * typed by the wire declaration (src/wire/, TypeBox `Static`) the Directory answers it with — type-only imports,
 * so nothing of TypeBox enters the bundle.
 */
import type { BlockResponse, DidRecordResponse, TransactionResponse } from '../../wire/directory.js';
import type { ReceivedErrorBody } from '../../wire/errors.js';
import type { CurrentPolicyResponse, OverviewResponse, SearchResponse } from '../../wire/explorer.js';
import type { ApplicationHistoryResponse, DidHistoryResponse, PersonaHistoryResponse } from '../../wire/history.js';
import type { HealthResponse } from '../../wire/meta.js';
import type { ApplicationResponse } from '../../wire/applications.js';
import type { PersonaRecordResponse } from '../../wire/personas.js';

export type Json = Record<string, unknown>;

/** A Directory route the explorer reads, and (as a type) what its 200 body is. */
export interface Read<T> {
  readonly path: string;
  /** Never set: carries the body's type. */
  readonly body?: T;
}

const read = <T>(path: string): Read<T> => ({ path });

/** A history page, whichever subject it is of. */
export type HistoryPage = DidHistoryResponse | PersonaHistoryResponse | ApplicationHistoryResponse;

/** The reads, each with the type of its answer. */
export const reads = {
  overview: (limit: number) => read<OverviewResponse>(`/overview?limit=${limit}`),
  search: (q: string) => read<SearchResponse>(`/search?q=${encodeURIComponent(q)}`),
  health: () => read<HealthResponse>('/health'),
  block: (which: string | number) => read<BlockResponse>(`/blocks/${encodeURIComponent(String(which))}`),
  transaction: (hash: string) => read<TransactionResponse>(`/transactions/${encodeURIComponent(hash)}`),
  did: (path: string) => read<DidRecordResponse>(path),
  persona: (path: string) => read<PersonaRecordResponse>(path),
  application: (path: string) => read<ApplicationResponse>(path),
  policy: (scope: string, id: string) => read<CurrentPolicyResponse>(`/policies/${encodeURIComponent(scope)}/${encodeURIComponent(id)}`),
  history: (path: string) => read<HistoryPage>(path),
};

/** A 200 with its typed body, or a refusal (its §0.6 body as received; status 0 when the network failed). */
export type Reply<T = unknown> = { ok: true; status: number; body: T } | { ok: false; status: number; body: ReceivedErrorBody };

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
export async function getJson<T>(r: Read<T>): Promise<Reply<T>> {
  try {
    const res = await fetch(`${API_BASE}${r.path}`, { headers: { accept: 'application/json' } });
    // the Directory answers a 200 with the route's declared body and anything else with the §0.6 body
    const body: unknown = await res.json().catch(() => ({}));
    return res.status === 200 ? { ok: true, status: 200, body: body as T } : { ok: false, status: res.status, body: obj(body) };
  } catch (e) {
    return { ok: false, status: 0, body: { code: 'network_error', message: String(e) } };
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
