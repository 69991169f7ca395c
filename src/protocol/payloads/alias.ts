/** `AliasAuthorizationPayload` (ledger-rules.md §4.1). */
import { type ScaleReader, ScaleWriter, tryDecodeStrict } from '../../codec/scale.js';

export const ALIAS_ACTIONS = ['Add', 'Update', 'Remove'] as const;
export type AliasAction = (typeof ALIAS_ACTIONS)[number];

export interface AliasPayload {
  did: string;
  action: AliasAction;
  alias: string | null;
  oldAlias: string | null;
  newAlias: string | null;
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

export function encodeAliasPayload(p: AliasPayload): Uint8Array {
  const w = new ScaleWriter();
  w.str(p.did).u8(ALIAS_ACTIONS.indexOf(p.action));
  for (const v of [p.alias, p.oldAlias, p.newAlias]) w.option(v, (w2, s) => w2.str(s));
  return w.u64(p.nonce).u64(p.validUntil).str(p.signerKeyId).finish();
}

function read(r: ScaleReader): AliasPayload {
  return {
    did: r.str(128),
    action: ALIAS_ACTIONS[r.variant(3)]!,
    alias: r.option((x) => x.str(64)),
    oldAlias: r.option((x) => x.str(64)),
    newAlias: r.option((x) => x.str(64)),
    nonce: r.u64(),
    validUntil: r.u64(),
    signerKeyId: r.str(64),
  };
}

export function decodeAliasPayload(b: Uint8Array): AliasPayload | undefined {
  return tryDecodeStrict(b, read, encodeAliasPayload);
}
