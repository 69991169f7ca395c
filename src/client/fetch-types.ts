/** The shape of fetch the SDK uses: what it sends and what it reads of an answer. */

/** The part of a fetch `Response` the SDK reads. The global `Response` satisfies it. */
export interface FetchResponseLike {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  text(): Promise<string>;
}

/** The part of `RequestInit` the SDK sends. */
export interface FetchInitLike {
  method: string;
  headers: Record<string, string>;
  body?: string;
}

/** A fetch implementation; the global `fetch` is the default, tests inject a fake. */
export type FetchLike = (url: string, init: FetchInitLike) => Promise<FetchResponseLike>;
