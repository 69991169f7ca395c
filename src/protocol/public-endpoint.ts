/**
 * Public route endpoints (http-api.md §8.1) and the address guard for outbound requests to endpoints taken from
 * DID documents: absolute https URIs with a host, no userinfo, query or fragment, whose host is a public name or
 * a global-unicast IP literal.
 */
import { BlockList, isIP } from 'node:net';

const SPECIAL_V4 = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const;
const SPECIAL_V6 = [
  ['::', 128],
  ['::1', 128],
  ['::ffff:0:0', 96],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const;

// Separate lists: a BlockList holding IPv6 rules also matches IPv4 addresses through their mapped form.
const specialV4 = new BlockList();
const specialV6 = new BlockList();
for (const [net, prefix] of SPECIAL_V4) specialV4.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of SPECIAL_V6) specialV6.addSubnet(net, prefix, 'ipv6');

const LOCAL_SUFFIXES = ['.localhost', '.local', '.internal', '.lan', '.home.arpa', '.test', '.invalid', '.example'];

/** True when `ip` (v4 or v6 literal) is outside global unicast. */
export function isSpecialAddress(ip: string): boolean {
  const v = isIP(ip);
  if (v === 4) return specialV4.check(ip, 'ipv4');
  if (v === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
    if (mapped) return true; // ::ffff:0:0/96 is special-use as a whole
    return specialV6.check(ip, 'ipv6');
  }
  return true;
}

export type EndpointProblem = 'not_https' | 'malformed' | 'credentials' | 'query_or_fragment' | 'non_public_host';

/** Checks one endpoint against the public-HTTPS rule; null when it passes. */
export function publicEndpointProblem(endpoint: string): EndpointProblem | null {
  let u: URL;
  try {
    u = new URL(endpoint);
  } catch {
    return 'malformed';
  }
  if (u.protocol !== 'https:') return 'not_https';
  if (!u.hostname) return 'malformed';
  if (u.username || u.password) return 'credentials';
  if (u.search || u.hash || endpoint.includes('?') || endpoint.includes('#')) return 'query_or_fragment';
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  if (isIP(host)) return isSpecialAddress(host) ? 'non_public_host' : null;
  const h = host.toLowerCase().replace(/\.$/, '');
  if (h === 'localhost' || !h.includes('.')) return 'non_public_host';
  if (LOCAL_SUFFIXES.some((s) => h.endsWith(s))) return 'non_public_host';
  return null;
}

/** Call steps: the endpoint host equals `registeredDomain` or is a subdomain of it. */
export function hostWithinDomain(endpoint: string, registeredDomain: string): boolean {
  try {
    const h = new URL(endpoint).hostname.toLowerCase();
    const d = registeredDomain.toLowerCase();
    return h === d || h.endsWith(`.${d}`);
  } catch {
    return false;
  }
}
