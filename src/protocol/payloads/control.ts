/** `ControlAuthorizationPayload` (ledger-rules.md §4.4). */
import { type ScaleReader, ScaleWriter, tryDecodeStrict } from '../../codec/scale.js';

export interface PolicyLinks {
  recipientPolicy: string | null;
  tagPolicies: string[];
  personaPolicies: string[];
}

export type ControlAction =
  | { kind: 'AddDevice'; deviceId: string }
  | { kind: 'TombstoneDevice'; deviceId: string }
  | { kind: 'UpdateDevice'; oldDeviceId: string; newDeviceId: string }
  | { kind: 'RemoveDevice'; deviceId: string }
  | { kind: 'DeactivateDid' }
  | { kind: 'SetDeliveryPolicyLinks'; links: PolicyLinks }
  | { kind: 'ClearDeliveryPolicyLinks' }
  | { kind: 'DeleteDid' };

const KINDS = [
  'AddDevice',
  'TombstoneDevice',
  'UpdateDevice',
  'RemoveDevice',
  'DeactivateDid',
  'SetDeliveryPolicyLinks',
  'ClearDeliveryPolicyLinks',
  'DeleteDid',
] as const;

export interface ControlPayload {
  did: string;
  action: ControlAction;
  nonce: bigint;
  validUntil: bigint;
  signerKeyId: string;
}

function writeAction(w: ScaleWriter, a: ControlAction): void {
  w.u8(KINDS.indexOf(a.kind));
  switch (a.kind) {
    case 'AddDevice':
    case 'TombstoneDevice':
    case 'RemoveDevice':
      w.str(a.deviceId);
      break;
    case 'UpdateDevice':
      w.str(a.oldDeviceId).str(a.newDeviceId);
      break;
    case 'SetDeliveryPolicyLinks':
      w.option(a.links.recipientPolicy, (w2, s) => w2.str(s));
      w.vec(a.links.tagPolicies, (w2, s) => w2.str(s));
      w.vec(a.links.personaPolicies, (w2, s) => w2.str(s));
      break;
    default:
      break;
  }
}

function readAction(r: ScaleReader): ControlAction {
  const kind = KINDS[r.variant(KINDS.length)]!;
  switch (kind) {
    case 'AddDevice':
    case 'TombstoneDevice':
    case 'RemoveDevice':
      return { kind, deviceId: r.str(64) };
    case 'UpdateDevice':
      return { kind, oldDeviceId: r.str(64), newDeviceId: r.str(64) };
    case 'SetDeliveryPolicyLinks':
      return {
        kind,
        links: {
          recipientPolicy: r.option((x) => x.str(128)),
          tagPolicies: r.vec(8, (x) => x.str(128)),
          personaPolicies: r.vec(8, (x) => x.str(128)),
        },
      };
    default:
      return { kind } as ControlAction;
  }
}

export function encodeControlPayload(p: ControlPayload): Uint8Array {
  const w = new ScaleWriter().str(p.did);
  writeAction(w, p.action);
  return w.u64(p.nonce).u64(p.validUntil).str(p.signerKeyId).finish();
}

function read(r: ScaleReader): ControlPayload {
  return { did: r.str(128), action: readAction(r), nonce: r.u64(), validUntil: r.u64(), signerKeyId: r.str(64) };
}

export function decodeControlPayload(b: Uint8Array): ControlPayload | undefined {
  return tryDecodeStrict(b, read, encodeControlPayload);
}
