/** Delivery service typing (ledger-rules.md §3.7): which services a route target or Call step may name. */
import type { Profile } from '../../protocol/profile.js';
import { didExists, getDidRecord } from '../records.js';
import type { StateReader } from '../state.js';

export type ServiceKind = 'Relay' | 'Cache' | 'Archive' | 'ApplicationControl';

/** The service `type` the profile requires for a kind (`<P>RelayService`, …). */
export function serviceTypeFor(profile: Profile, kind: ServiceKind): string {
  switch (kind) {
    case 'Relay':
      return profile.relayServiceType;
    case 'Cache':
      return profile.cacheServiceType;
    case 'Archive':
      return profile.archiveServiceType;
    case 'ApplicationControl':
      return profile.applicationControlServiceType;
  }
}

/**
 * True iff `serviceDid` is active and its document has a service with `id == serviceId` (byte equality) and the
 * kind's type. No endpoint URL is checked here (the Directory applies the public-HTTPS rule).
 */
export function isDeliveryService(s: StateReader, profile: Profile, serviceDid: string, serviceId: string, kind: ServiceKind): boolean {
  if (!didExists(s, serviceDid)) return false;
  const type = serviceTypeFor(profile, kind);
  const services = getDidRecord(s, serviceDid)!.document?.service ?? [];
  return services.some((x) => x.id === serviceId && x.type === type);
}
