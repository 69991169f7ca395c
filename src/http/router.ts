/**
 * Router on the raw path (http-api.md §0.4). Fastify's router decodes `%2F` before matching, so every role
 * routes through this one instead: segments are split on the raw `/`, decoded once, then matched against a
 * segment trie in which static segments win over parameters (`/blocks/latest` before `/blocks/:number`).
 */
import { DdnError } from '../base/errors.js';
import { decodePathSegments } from './url.js';

/** Names of the `:params` of a route pattern, e.g. `'did' | 'serviceId'`. */
export type ParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? Name | ParamNames<`/${Rest}`>
  : P extends `${string}:${infer Name}`
    ? Name
    : never;

/** The decoded path parameters of pattern `P`; `Record<string, string>` when `P` is not a literal. */
export type PathParams<P extends string> = string extends P
  ? Record<string, string>
  : { [K in ParamNames<P>]: string };

/** A successful match. */
export interface RouteMatch<R> {
  value: R;
  /** The pattern the route was added with. */
  pattern: string;
  /** Path parameters, each percent-decoded exactly once. */
  params: Record<string, string>;
}

interface Endpoint<R> {
  value: R;
  pattern: string;
  paramNames: readonly string[];
}

interface Node<R> {
  statics: Map<string, Node<R>>;
  param: Node<R> | undefined;
  endpoints: Map<string, Endpoint<R>> | undefined;
}

function newNode<R>(): Node<R> {
  return { statics: new Map(), param: undefined, endpoints: undefined };
}

/** Options of a {@link Router}. */
export interface RouterOptions {
  /** Path prefix every route lives under (a role's base URL may carry one, §0.1); `''` or `/` for none. */
  basePath?: string;
}

/** Splits a pattern like `/dids/:did/aliases` into its segments; one trailing `/` is ignored. */
function patternSegments(pattern: string): string[] {
  if (!pattern.startsWith('/')) throw new Error(`route pattern must start with '/': ${pattern}`);
  const trimmed = pattern.length > 1 && pattern.endsWith('/') ? pattern.slice(1, -1) : pattern.slice(1);
  return trimmed.length === 0 ? [] : trimmed.split('/');
}

/**
 * Maps (method, raw path) to a value of type `R` (a route handler in practice). `HEAD` falls back to `GET`.
 */
export class Router<R> {
  private readonly root: Node<R> = newNode();
  private readonly base: readonly string[];

  constructor(options: RouterOptions = {}) {
    const basePath = options.basePath ?? '';
    this.base = basePath === '' ? [] : decodePathSegments(basePath.startsWith('/') ? basePath : `/${basePath}`);
  }

  /** Adds a route. Throws (a programming error) on a duplicate method + shape or a malformed pattern. */
  add(method: string, pattern: string, value: R): void {
    const upper = method.toUpperCase();
    const paramNames: string[] = [];
    let node = this.root;
    for (const seg of patternSegments(pattern)) {
      if (seg.startsWith(':')) {
        const name = seg.slice(1);
        if (name.length === 0 || paramNames.includes(name)) throw new Error(`bad route pattern: ${pattern}`);
        paramNames.push(name);
        node.param ??= newNode();
        node = node.param;
      } else {
        if (seg.length === 0) throw new Error(`empty segment in route pattern: ${pattern}`);
        let next = node.statics.get(seg);
        if (next === undefined) {
          next = newNode();
          node.statics.set(seg, next);
        }
        node = next;
      }
    }
    node.endpoints ??= new Map();
    if (node.endpoints.has(upper)) throw new Error(`duplicate route: ${upper} ${pattern}`);
    node.endpoints.set(upper, { value, pattern, paramNames });
  }

  /**
   * Matches a raw path (no query). Throws `invalid_path` (bad percent-encoding), `not_found` (no route for the
   * path) or `method_not_allowed` (`details.allow` lists the methods the path has).
   */
  match(method: string, rawPath: string): RouteMatch<R> {
    const segs = this.stripBase(decodePathSegments(rawPath));
    if (segs === undefined) throw new DdnError('not_found', 'no such route');
    const upper = method.toUpperCase();
    const values: string[] = [];
    const ep = this.find(this.root, segs, 0, values, upper, upper === 'HEAD' ? 'GET' : undefined);
    if (ep === undefined) return this.noMatch(upper, segs);
    const params: Record<string, string> = {};
    for (let i = 0; i < ep.paramNames.length; i++) params[ep.paramNames[i]] = values[i];
    return { value: ep.value, pattern: ep.pattern, params };
  }

  /** The failure for a path without an endpoint for the method: `not_found` or `method_not_allowed`. */
  private noMatch(upper: string, segs: readonly string[]): never {
    const allow = new Set<string>();
    this.collect(this.root, segs, 0, allow);
    if (allow.size === 0) throw new DdnError('not_found', 'no such route');
    if (allow.has('GET')) allow.add('HEAD');
    throw new DdnError('method_not_allowed', `method ${upper} not allowed`, { allow: [...allow].sort() });
  }

  private stripBase(segs: string[]): string[] | undefined {
    if (this.base.length === 0) return segs;
    if (segs.length < this.base.length) return undefined;
    for (let i = 0; i < this.base.length; i++) if (segs[i] !== this.base[i]) return undefined;
    return segs.slice(this.base.length);
  }

  /**
   * The endpoint for `method` (or `fallback`) of the first matching path, depth-first with static segments
   * before parameters; the parameter values of that path are left in `values`.
   */
  private find(
    node: Node<R>,
    segs: readonly string[],
    i: number,
    values: string[],
    method: string,
    fallback: string | undefined,
  ): Endpoint<R> | undefined {
    if (i === segs.length) {
      const eps = node.endpoints;
      if (eps === undefined) return undefined;
      return eps.get(method) ?? (fallback === undefined ? undefined : eps.get(fallback));
    }
    const seg = segs[i];
    const child = node.statics.get(seg);
    if (child !== undefined) {
      const ep = this.find(child, segs, i + 1, values, method, fallback);
      if (ep !== undefined) return ep;
    }
    if (node.param !== undefined && seg.length > 0) {
      values.push(seg);
      const ep = this.find(node.param, segs, i + 1, values, method, fallback);
      if (ep !== undefined) return ep;
      values.pop();
    }
    return undefined;
  }

  /** Adds the methods of every path matching `segs` to `allow`. */
  private collect(node: Node<R>, segs: readonly string[], i: number, allow: Set<string>): void {
    if (i === segs.length) {
      if (node.endpoints !== undefined) for (const m of node.endpoints.keys()) allow.add(m);
      return;
    }
    const child = node.statics.get(segs[i]);
    if (child !== undefined) this.collect(child, segs, i + 1, allow);
    if (node.param !== undefined && segs[i].length > 0) this.collect(node.param, segs, i + 1, allow);
  }
}
