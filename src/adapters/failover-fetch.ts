/**
 * A {@link FetchLike} over several base URLs of one Directory, for SDK clients built on the first of them
 * (`new DirectoryClient(urls[0], { fetch: failoverFetch(urls) })`): a request to a URL under the
 * first base goes to the base that last answered and on a connection failure, a timeout or a 5xx to the next
 * (src/base/failover.ts). When every base fails, the last 5xx answer is returned (so the client sees a retryable
 * status) or the last network error is thrown. URLs under none of the bases pass through unchanged.
 */
import type { Logger } from 'pino';
import { BaseFailover, FailoverExhausted } from '../base/failover.js';
import { globalFetch, type FetchLike, type FetchResponseLike } from '../client/http.js';

/** An answer whose body was read, so a failed attempt holds no connection open. */
async function buffered(res: FetchResponseLike): Promise<FetchResponseLike> {
  const text = await res.text();
  return { status: res.status, headers: res.headers, text: async () => text };
}

export function failoverFetch(urls: string | readonly string[], fetchImpl: FetchLike = globalFetch, logger?: Logger): FetchLike {
  const failover = new BaseFailover(urls, logger?.child({ component: 'directory-client' }));
  const first = failover.bases[0]!;
  return async (url, init) => {
    if (!url.startsWith(first) || !['', '/', '?'].includes(url.charAt(first.length))) return fetchImpl(url, init);
    const rest = url.slice(first.length);
    try {
      return await failover.send(async (base) => buffered(await fetchImpl(`${base}${rest}`, init)));
    } catch (e) {
      if (!(e instanceof FailoverExhausted)) throw e;
      if ('answer' in e.last) return e.last.answer as FetchResponseLike;
      throw e.last.error;
    }
  };
}
