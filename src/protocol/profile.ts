/** Network profile strings (ledger-rules.md §1.1, http-api.md §0.2). */

export interface Profile {
  /** Lowercase name `<p>`, e.g. `platform`. */
  readonly p: string;
  /** Capitalised name `<P>`, e.g. `Platform`. */
  readonly P: string;
  readonly relayServiceType: string;
  readonly cacheServiceType: string;
  readonly archiveServiceType: string;
  readonly applicationControlServiceType: string;
  readonly registerPrefix: string;
  readonly setDocumentPrefix: string;
  readonly policyIdPrefixV2: string;
  readonly policyIdPrefixV3: string;
  readonly personaAttestationDomain: string;
  readonly personaTransferDomain: string;
  readonly applicationDomain: string;
  readonly retrievalProofHeader: string;
  readonly envelopeSignaturePrefix: string;
  readonly nodeRequestHeader: string;
  readonly personaTxtPrefix: string;
  readonly personaTxtValuePrefix: string;
  readonly personaReleaseProfile: string;
  readonly controlPayloadProfile: string;
  readonly controlRecordFormat: string;
  readonly controlTag: string;
  /**
   * Whether the Directory also accepts the request forms deployed clients send where they differ from the product
   * spec (http-api.md §12): ISO-8601 `valid_until`, a DID change without `canonical_payload`, a named persona
   * without `controller_keys` / `controller_threshold`, `policy_ttl_seconds` in a v2 policy. True for `openpayload`
   * (the deployed clients' profile), false otherwise: the spec's forms only.
   */
  readonly acceptsDeployedClientForms: boolean;
}

const BUILT_IN: Record<string, string> = { platform: 'Platform', openpayload: 'OpenPayload' };

/** Builds a profile: `platform` and `openpayload` are built in; a custom `[a-z0-9]{1,32}` name may give its `<P>`. */
export function makeProfile(p: string, P?: string): Profile {
  if (!/^[a-z0-9]{1,32}$/.test(p)) throw new Error(`invalid profile name: ${p}`);
  const cap = P ?? BUILT_IN[p] ?? p.charAt(0).toUpperCase() + p.slice(1);
  return Object.freeze({
    p,
    P: cap,
    relayServiceType: `${cap}RelayService`,
    cacheServiceType: `${cap}CacheService`,
    archiveServiceType: `${cap}ArchiveService`,
    applicationControlServiceType: `${cap}ApplicationControlService`,
    registerPrefix: `${p}:register:v2|`,
    setDocumentPrefix: `${p}:set_document:v2|`,
    policyIdPrefixV2: `${p}:delivery-policy:v2:`,
    policyIdPrefixV3: `${p}:delivery-policy:v3:`,
    personaAttestationDomain: `${p}:persona:dns:v1`,
    personaTransferDomain: `${p}:persona:transfer:v1`,
    applicationDomain: `${p}:application-registry:v1`,
    retrievalProofHeader: `${p}:cache:retrieval-proof:v1`,
    envelopeSignaturePrefix: `${p}:envelope-signature:v2|`,
    nodeRequestHeader: `${p}:node-request:v1`,
    personaTxtPrefix: `_${p}-persona.`,
    personaTxtValuePrefix: `${p}-persona-verification=`,
    personaReleaseProfile: `${p}:persona-release:v1`,
    controlPayloadProfile: `${p}:cbor-chunk:x25519-hkdf-sha256-chacha20poly1305:v1`,
    controlRecordFormat: `${p}:binary-chunk:v1`,
    controlTag: `${p}:control`,
    acceptsDeployedClientForms: p === 'openpayload',
  });
}

export const PLATFORM = makeProfile('platform');

/**
 * True for profile `openpayload`, which keeps the deployed chain's rules where ddn hardens them in every other
 * profile: event-rule Send steps may address any existing DID, and a deleted DID may be registered again
 * (docs/public-node.md, "Event rules and amplification" and "Deleted DIDs").
 */
export function followsDeployedChain(profile: Profile): boolean {
  return profile.p === 'openpayload';
}
