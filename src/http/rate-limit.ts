/**
 * Request rate limits of every role (docs/public-node.md, "Request rate limits"). Each route names a class
 * ({@link RateClass}); a request is counted against its class's budget for the client address and, for writes
 * with a target, against the class's budget for that target (a DID, persona or application). Over either
 * budget the answer is 429 `rate_limited` with `Retry-After`.
 *
 * Counting is rate-limiter-flexible's (a fixed window per key, started by the key's first request). In one
 * process the counters are a {@link RateLimiterMemory} per budget whose number of keys is bounded
 * ({@link BoundedMemoryLimiter}); with a shared store (PostgreSQL, built by the composition root) a budget holds
 * across every process on it.
 *
 * The client address is the socket's peer, or, when that peer is a configured trusted proxy, the nearest
 * address in `X-Forwarded-For` that is not a trusted proxy. IPv6 clients are counted per /64 (one host usually
 * holds a whole /64). The check is cheap: a route without a class costs one property read, a limited one a
 * map lookup and one promise.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { DdnError } from '../base/errors.js';
import type { Reads } from './json-body.js';

/** The classes a route can count against. */
export const RATE_CLASSES = ['registration', 'directory-write', 'dns-challenge', 'relay-post', 'cache-store', 'cache-retrieval', 'read'] as const;
export type RateClass = (typeof RATE_CLASSES)[number];

/** Classes that also have a per-target budget (`<class>-target`). */
const TARGET_CLASSES = ['directory-write', 'dns-challenge', 'relay-post', 'cache-store'] as const;
type TargetClass = (typeof TARGET_CLASSES)[number];

/** One budget: `points` requests per `seconds`, per key. */
export interface RateBudget {
  readonly points: number;
  readonly seconds: number;
}

/** Every budget's name: a class (per client address) or `<class>-target` (per target). */
export type RateBudgetName = RateClass | `${TargetClass}-target`;
export const RATE_BUDGETS: readonly RateBudgetName[] = [...RATE_CLASSES, ...TARGET_CLASSES.map((c) => `${c}-target` as const)];

/**
 * The defaults, per minute: far above what an honest client does (registering a DID takes 2 requests, a busy
 * sender posts a few per second), far below a flood.
 */
export const DEFAULT_RATE_BUDGETS: Readonly<Record<RateBudgetName, RateBudget>> = Object.freeze({
  registration: { points: 300, seconds: 60 },
  'directory-write': { points: 600, seconds: 60 },
  'directory-write-target': { points: 120, seconds: 60 },
  'dns-challenge': { points: 60, seconds: 60 },
  'dns-challenge-target': { points: 30, seconds: 60 },
  'relay-post': { points: 6000, seconds: 60 },
  'relay-post-target': { points: 6000, seconds: 60 },
  'cache-store': { points: 60000, seconds: 60 },
  'cache-store-target': { points: 6000, seconds: 60 },
  'cache-retrieval': { points: 6000, seconds: 60 },
  read: { points: 60000, seconds: 60 },
});

/** Keys one in-memory budget tracks at most (client addresses or targets within one window). */
export const DEFAULT_RATE_MAX_KEYS = 100_000;

/** The rate-limit settings of a node (`--rate-limit*`, `--trusted-proxies`). */
export interface RateLimitSettings {
  /** Each budget; `null`: that budget is off. */
  readonly budgets: Readonly<Record<RateBudgetName, RateBudget | null>>;
  /** Peers whose `X-Forwarded-For` is believed: IP addresses and CIDR blocks. */
  readonly trustedProxies: readonly string[];
  /** Keys an in-memory budget tracks at most (see {@link BoundedMemoryLimiter}). */
  readonly maxKeys: number;
}

/**
 * `N/PERIOD` (`300/1m`, `20/10s`, `1000/h`) as a budget, or `off` as null; undefined when malformed. Periods
 * are seconds, minutes or hours, at most a day.
 */
export function parseRateBudget(text: string): RateBudget | null | undefined {
  const s = text.trim().toLowerCase();
  if (s === 'off') return null;
  const m = /^(\d{1,9})\/(\d{0,5})(s|m|h)$/.exec(s);
  if (m === null) return undefined;
  const points = Number(m[1]);
  const seconds = (m[2] === '' ? 1 : Number(m[2])) * (m[3] === 's' ? 1 : m[3] === 'm' ? 60 : 3600);
  if (points < 1 || seconds < 1 || seconds > 86_400) return undefined;
  return { points, seconds };
}

/** A budget as `parseRateBudget` reads it. */
export function formatRateBudget(b: RateBudget | null): string {
  return b === null ? 'off' : b.seconds % 60 === 0 ? `${b.points}/${b.seconds / 60}m` : `${b.points}/${b.seconds}s`;
}

/** The trusted-proxy list as a node:net BlockList; throws on an entry that is neither an address nor a CIDR block. */
export function trustedProxyList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const slash = entry.indexOf('/');
    const address = normalizeIp(slash < 0 ? entry : entry.slice(0, slash));
    const family = address === undefined ? 0 : isIP(address);
    const bits = slash < 0 ? undefined : /^\d{1,3}$/.test(entry.slice(slash + 1)) ? Number(entry.slice(slash + 1)) : NaN;
    if (address === undefined || family === 0 || (bits !== undefined && !(bits <= (family === 4 ? 32 : 128)))) {
      throw new Error(`not an IP address or CIDR block: '${entry}'`);
    }
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, bits, type);
  }
  return list;
}

/** `ip` without brackets or a zone, IPv4-mapped IPv6 as IPv4; undefined when it is no IP address. */
function normalizeIp(ip: string): string | undefined {
  let s = ip.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  const family = isIP(s);
  if (family === 0) return undefined;
  if (family === 6 && /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(s)) return s.slice(7);
  return s.toLowerCase();
}

/** The eight 16-bit groups of an IPv6 address (valid by `isIP`), as numbers. */
function ipv6Groups(ip: string): number[] {
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const parse = (part: string | undefined): number[] => {
    if (part === undefined || part === '') return [];
    const groups: number[] = [];
    for (const g of part.split(':')) {
      if (g.includes('.')) {
        const [a, b, c, d] = g.split('.').map(Number) as [number, number, number, number];
        groups.push((a << 8) | b, (c << 8) | d);
      } else groups.push(parseInt(g, 16));
    }
    return groups;
  };
  const h = parse(head);
  const t = parse(tail);
  return [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
}

/** The key an address is counted under: an IPv4 address itself, an IPv6 address's /64. */
export function addressKey(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  return `${ipv6Groups(ip)
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}

/**
 * The client's address: the socket peer, or, when the peer is a trusted proxy, the right-most address of
 * `X-Forwarded-For` that is not a trusted proxy (each proxy appends the address it received from). An entry
 * that is no IP address ends the walk at the hop before it.
 */
export function clientAddress(peer: string | undefined, forwardedFor: string | undefined, trusted: BlockList | undefined): string {
  let client = (peer === undefined ? undefined : normalizeIp(peer)) ?? 'unknown';
  if (trusted === undefined || forwardedFor === undefined || !isTrusted(trusted, client)) return client;
  const hops = forwardedFor.split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalizeIp(hops[i]!);
    if (hop === undefined) break;
    client = hop;
    if (!isTrusted(trusted, hop)) break;
  }
  return client;
}

function isTrusted(list: BlockList, ip: string): boolean {
  const family = isIP(ip);
  return family !== 0 && list.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/** A rate-limiter-flexible limiter as this module uses it. */
export interface Limiter {
  consume(key: string): Promise<RateLimiterRes>;
  /** The key's state in its current window, without counting; null when it has none. */
  get(key: string): Promise<RateLimiterRes | null>;
}

/**
 * A {@link RateLimiterMemory} that tracks at most about `maxKeys` keys. Every key's record lives one window
 * (`seconds`) from its first request; keys first seen in one generation (a window) are counted, and once a
 * generation has seen `maxKeys / 2` new keys, further new keys of that generation are not kept: they share one
 * overflow key, so a flood from very many addresses is still limited, as one client. Records older than two
 * generations have expired, so at most `maxKeys` records are alive.
 */
export class BoundedMemoryLimiter implements Limiter {
  private readonly limiter: RateLimiterMemory;
  private readonly perGeneration: number;
  private generationStart = -Infinity;
  private current = 0;
  private previous = 0;

  constructor(
    readonly budget: RateBudget,
    maxKeys: number,
    private readonly now: () => number = Date.now,
  ) {
    this.limiter = new RateLimiterMemory({ points: budget.points, duration: budget.seconds, keyPrefix: '' });
    this.perGeneration = Math.max(1, Math.floor(maxKeys / 2));
  }

  /** Records (keys) alive at most now. */
  get trackedKeys(): number {
    return this.current + this.previous;
  }

  async consume(key: string): Promise<RateLimiterRes> {
    const res = await this.limiter.consume(key);
    if (!res.isFirstInDuration) return res;
    const now = this.now();
    const windowMs = this.budget.seconds * 1000;
    if (now - this.generationStart >= windowMs) {
      this.previous = now - this.generationStart < 2 * windowMs ? this.current : 0;
      this.current = 0;
      this.generationStart = now;
    }
    if (this.current < this.perGeneration) {
      this.current++;
      return res;
    }
    await this.limiter.delete(key);
    return this.limiter.consume(OVERFLOW_KEY);
  }

  get(key: string): Promise<RateLimiterRes | null> {
    return this.limiter.get(key);
  }
}

/** Where the keys beyond a {@link BoundedMemoryLimiter}'s bound are counted (no address or DID looks like it). */
const OVERFLOW_KEY = '~overflow';

/** Makes the limiter of one budget (the composition root's, for a shared store); undefined: an in-memory one. */
export type LimiterFactory = (name: RateBudgetName, budget: RateBudget) => Limiter | undefined;

/** What a route declares about its rate limit (a subset of RouteOptions). */
export interface RateRouteOptions {
  rateClass?: RateClass;
}

/** The refusal of a request over `budget`, retried after `msBeforeNext`. */
function refusal(name: RateBudgetName, budget: RateBudget, msBeforeNext: number): DdnError {
  const scope = name.endsWith('-target') ? 'target' : 'client address';
  return new DdnError('rate_limited', `too many requests for this ${scope}; retry later`, {
    retry_after_seconds: Math.max(1, Math.ceil(msBeforeNext / 1000)),
    limit: budget.points,
    period_seconds: budget.seconds,
  });
}

/** Long keys (persona names, odd DIDs) are hashed so every key stays short (the PostgreSQL key is 255 chars). */
function targetKey(target: string): string {
  return target.length <= 120 ? target : `#${createHash('sha256').update(target).digest('base64url')}`;
}

/** The budgets of one node, shared by all its roles' servers. */
export class RateLimits {
  private readonly limiters = new Map<RateBudgetName, { limiter: Limiter; budget: RateBudget }>();
  private readonly trusted: BlockList | undefined;
  /** Requests refused so far, by budget (metrics: `ddn_rate_limit_refusals_total`); budgets that are off are absent. */
  readonly refusals: Partial<Record<RateBudgetName, number>> = {};

  constructor(settings: RateLimitSettings, factory?: LimiterFactory) {
    this.trusted = settings.trustedProxies.length === 0 ? undefined : trustedProxyList(settings.trustedProxies);
    for (const name of RATE_BUDGETS) {
      const budget = settings.budgets[name];
      if (budget === null) continue;
      const limiter = factory?.(name, budget) ?? new BoundedMemoryLimiter(budget, settings.maxKeys);
      this.limiters.set(name, { limiter, budget });
      this.refusals[name] = 0;
    }
  }

  /** The client address of `req` as these limits count it (headers are read only behind a trusted proxy). */
  clientOf(req: IncomingMessage): string {
    const peer = req.socket.remoteAddress;
    if (this.trusted === undefined) return clientAddress(peer, undefined, undefined);
    const xff = req.headers['x-forwarded-for'];
    return clientAddress(peer, Array.isArray(xff) ? xff.join(',') : xff, this.trusted);
  }

  /** Counts a request of a route against its class's per-address budget; undefined when none applies. */
  admitClient(options: RateRouteOptions, req: IncomingMessage): Promise<void> | undefined {
    const cls = options.rateClass;
    return cls === undefined ? undefined : this.admit(cls, addressKey(this.clientOf(req)));
  }

  /**
   * Refuses a write whose target is over its per-target budget, without counting it; undefined when none applies.
   * Only writes that succeed are counted ({@link countTarget}): a stranger's invalid or unsigned requests naming a
   * DID never use up its budget, so they cannot lock its owner (or its honest senders) out.
   */
  checkTarget(options: RateRouteOptions, target: string | undefined): Promise<void> | undefined {
    const budget = this.targetBudget(options, target);
    if (budget === undefined) return undefined;
    const { name, entry, key } = budget;
    return entry.limiter.get(key).then((res) => {
      if (res !== null && res.consumedPoints >= entry.budget.points) throw this.refuse(name, entry.budget, res.msBeforeNext);
    });
  }

  /** Counts a write that succeeded against its target's budget (one over the budget is still counted, never refused). */
  countTarget(options: RateRouteOptions, target: string | undefined): Promise<void> | undefined {
    const budget = this.targetBudget(options, target);
    if (budget === undefined) return undefined;
    return budget.entry.limiter.consume(budget.key).then(
      () => undefined,
      (err: unknown) => {
        if (!(err instanceof RateLimiterRes)) throw err;
      },
    );
  }

  private targetBudget(options: RateRouteOptions, target: string | undefined) {
    const cls = options.rateClass;
    if (cls === undefined || target === undefined || !(TARGET_CLASSES as readonly string[]).includes(cls)) return undefined;
    const name: RateBudgetName = `${cls as TargetClass}-target`;
    const entry = this.limiters.get(name);
    return entry === undefined ? undefined : { name, entry, key: targetKey(target) };
  }

  /** The refusal of a request over `name`'s budget, counted. */
  private refuse(name: RateBudgetName, budget: RateBudget, msBeforeNext: number): DdnError {
    this.refusals[name] = (this.refusals[name] ?? 0) + 1;
    return refusal(name, budget, msBeforeNext);
  }

  private admit(name: RateBudgetName, key: string): Promise<void> | undefined {
    const entry = this.limiters.get(name);
    if (entry === undefined) return undefined;
    return entry.limiter.consume(key).then(
      () => undefined,
      (err: unknown) => {
        // rate-limiter-flexible rejects with the key's state when it is over its budget
        if (err instanceof RateLimiterRes) throw this.refuse(name, entry.budget, err.msBeforeNext);
        throw err;
      },
    );
  }
}

/** The recipient an envelope body names (`to` or `recipient`, without a `@persona`), for per-recipient budgets. */
export function envelopeRecipientOf(body: Reads<'to' | 'recipient'> | undefined): string | undefined {
  const to = body?.to ?? body?.recipient;
  if (typeof to !== 'string' || to.length === 0) return undefined;
  const at = to.indexOf('@');
  return at < 0 ? to : to.slice(0, at);
}
