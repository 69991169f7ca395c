/** A fake `fetch` for SDK tests: records every request and answers from a handler. */
import type { FetchLike } from '../../src/client/http.js';

export const BASE = 'http://directory.test/prefix';

export interface RecordedRequest {
  method: string;
  /** The raw (still percent-encoded) path after the base URL. */
  path: string;
  headers: Record<string, string>;
  /** Parsed JSON body, undefined when none was sent. */
  body: unknown;
}

export interface FakeAnswer {
  status: number;
  body?: unknown;
  /** Raw text instead of a JSON body. */
  text?: string;
  headers?: Record<string, string>;
}

export type FakeHandler = (req: RecordedRequest) => FakeAnswer | Promise<FakeAnswer>;

export function fakeFetch(handler: FakeHandler): { fetch: FetchLike; calls: RecordedRequest[] } {
  const calls: RecordedRequest[] = [];
  const fetch: FetchLike = async (url, init) => {
    if (!url.startsWith(BASE)) throw new Error(`unexpected URL ${url}`);
    const req: RecordedRequest = {
      method: init.method,
      path: url.slice(BASE.length),
      headers: init.headers,
      body: init.body === undefined ? undefined : (JSON.parse(init.body) as unknown),
    };
    calls.push(req);
    const a = await handler(req);
    const headers = new Map(Object.entries(a.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
    return {
      status: a.status,
      headers: { get: (n: string) => headers.get(n.toLowerCase()) ?? null },
      text: async () => a.text ?? JSON.stringify(a.body ?? {}),
    };
  };
  return { fetch, calls };
}

export { fakeTiming } from '../support/fake-timing.js';
