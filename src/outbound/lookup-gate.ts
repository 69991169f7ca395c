/**
 * Turns at the system resolver for outbound connections. `dns.lookup` (getaddrinfo, which reads /etc/hosts and the
 * search domains as every other program does) blocks one of libuv's threads (4 by default, shared with the process's
 * file work) until the name's DNS servers answer or time out: a name whose servers answer late holds a thread for
 * seconds, and anybody may register a DID whose endpoints use such names. Unbounded, a few of them hold the whole
 * pool and every other destination's lookup waits behind them.
 *
 * So lookups take turns here: at most `maxInFlight` at the resolver in total (by default one less than the pool's
 * threads), at most one at a time per registrable domain (`tldts`, the Public Suffix List: `a.slow.example` and
 * `b.slow.example` share a turn), concurrent lookups of one name share one call, and domains waiting take turns
 * round robin. A lookup waits at most `waitMs` (the connect timeout) for its turn and at most `maxWaiting` wait in
 * all; past either it fails at once (`EAI_AGAIN`), as a resolver that is not answering would.
 */
import type { LookupAddress } from 'node:dns';
import { getDomain } from 'tldts';

/** Addresses of `hostname` (family 0: any), as `dns.lookup(hostname, { family, all: true }, cb)` gives them. */
export type ResolveAll = (hostname: string, family: number, cb: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;
type Callback = (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void;

export interface LookupGateOptions {
  /** Lookups at the resolver at once, in total. */
  maxInFlight: number;
  /** Lookups waiting for a turn, in total; past it a lookup fails at once. */
  maxWaiting: number;
  /** Longest wait for a turn (ms); past it a lookup fails. */
  waitMs: number;
}

/** One name's lookup: its callers, waiting for a turn or at the resolver. */
interface Lookup {
  key: string;
  hostname: string;
  family: number;
  domain: string;
  callers: Callback[];
  timer?: NodeJS.Timeout;
}

/** The error a lookup gets when it is not given a turn (too many waiting, or waited too long). */
function notAnswered(hostname: string, why: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`DNS lookup of ${hostname} not made: ${why}`), { code: 'EAI_AGAIN', hostname });
}

export class LookupGate {
  private readonly running = new Map<string, Lookup>();
  /** Lookups waiting, by key (to join one) and by domain (each domain's in arrival order, domains in turn order). */
  private readonly waitingByKey = new Map<string, Lookup>();
  private readonly waitingByDomain = new Map<string, Lookup[]>();
  /** Domains with a lookup at the resolver. */
  private readonly busyDomains = new Set<string>();
  /** Lookups refused a turn, by why (observability; tests). */
  readonly refused = { full: 0, waited: 0 };

  constructor(
    private readonly resolve: ResolveAll,
    private readonly o: LookupGateOptions,
  ) {}

  /** Lookups at the resolver, and waiting for a turn. */
  get load(): { running: number; waiting: number } {
    return { running: this.running.size, waiting: this.waitingByKey.size };
  }

  /** Calls `cb` with every address of `hostname` (family 0: any) once it had its turn, or with why not. */
  lookup(hostname: string, family: number, cb: Callback): void {
    const key = `${family}:${hostname.toLowerCase()}`;
    const same = this.running.get(key) ?? this.waitingByKey.get(key);
    if (same !== undefined) {
      same.callers.push(cb);
      return;
    }
    const domain = getDomain(hostname) ?? hostname.toLowerCase();
    const l: Lookup = { key, hostname, family, domain, callers: [cb] };
    if (this.running.size < this.o.maxInFlight && !this.busyDomains.has(domain)) {
      this.start(l);
      return;
    }
    if (this.waitingByKey.size >= this.o.maxWaiting) {
      this.refused.full++;
      cb(notAnswered(hostname, `${this.o.maxWaiting} lookups are waiting`), []);
      return;
    }
    this.waitingByKey.set(key, l);
    const queue = this.waitingByDomain.get(domain);
    if (queue === undefined) this.waitingByDomain.set(domain, [l]);
    else queue.push(l);
    // kept referenced: a lookup waiting is a connection on its way, which keeps its process up as a request does
    l.timer = setTimeout(() => this.expire(l), this.o.waitMs);
  }

  private start(l: Lookup): void {
    this.running.set(l.key, l);
    this.busyDomains.add(l.domain);
    this.resolve(l.hostname, l.family, (err, addresses) => {
      this.running.delete(l.key);
      this.busyDomains.delete(l.domain);
      this.next();
      for (const cb of l.callers) cb(err, addresses);
    });
  }

  /** Gives free turns to waiting lookups: the first domain in turn order with none at the resolver, then the next. */
  private next(): void {
    for (const [domain, queue] of this.waitingByDomain) {
      if (this.running.size >= this.o.maxInFlight) return;
      if (this.busyDomains.has(domain)) continue;
      const l = queue.shift()!;
      // the domain goes to the back of the turn order (or leaves it, with nobody left waiting)
      this.waitingByDomain.delete(domain);
      if (queue.length > 0) this.waitingByDomain.set(domain, queue);
      this.waitingByKey.delete(l.key);
      clearTimeout(l.timer);
      this.start(l);
    }
  }

  private expire(l: Lookup): void {
    if (this.waitingByKey.get(l.key) !== l) return;
    this.waitingByKey.delete(l.key);
    const queue = this.waitingByDomain.get(l.domain)!;
    queue.splice(queue.indexOf(l), 1);
    if (queue.length === 0) this.waitingByDomain.delete(l.domain);
    this.refused.waited++;
    const err = notAnswered(l.hostname, `no turn within ${this.o.waitMs} ms`);
    for (const cb of l.callers) cb(err, []);
  }
}
