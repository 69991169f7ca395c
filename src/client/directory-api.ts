/** The base of the SDK's Directory resource clients (personas, policies, applications): one base URL, JSON calls. */
import type { Profile } from '../protocol/profile.js';
import { globalFetch, requestJson, type FetchLike, type HttpMethod } from './http.js';

export abstract class DirectoryApi {
  constructor(
    readonly baseUrl: string,
    protected readonly profile: Profile,
    protected readonly fetchImpl: FetchLike = globalFetch,
  ) {}

  /** A JSON request; a non-2xx answer rejects with `DirectoryApiError`. */
  protected async call<T>(method: HttpMethod, path: string, body?: unknown): Promise<T> {
    return (await requestJson<T>(this.baseUrl, method, path, body, this.fetchImpl)).body;
  }
}
