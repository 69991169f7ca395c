/** Genesis and block headers (ledger-rules.md §2.1, §2.2). */
import { utf8 } from '../base/bytes.js';
import { ScaleWriter } from '../codec/scale.js';
import { blake2_256 } from '../crypto/hash.js';

export interface GenesisConfig {
  profile: string;
  chainId: string;
  genesisTimeMs: number;
  personaAttestors: Uint8Array[];
}

export interface BlockHeader {
  parentHash: Uint8Array;
  number: number;
  timestampMs: number;
  extrinsicsRoot: Uint8Array;
  resultsRoot: Uint8Array;
}

export interface TxResult {
  txHash: Uint8Array;
  success: boolean;
  /** Ledger error name, empty on success. */
  error: string;
}

export function encodeGenesisConfig(g: GenesisConfig): Uint8Array {
  return new ScaleWriter()
    .str(g.profile)
    .str(g.chainId)
    .u64(BigInt(g.genesisTimeMs))
    .vec(g.personaAttestors, (w, k) => w.raw(k))
    .finish();
}

export function encodeHeader(h: BlockHeader): Uint8Array {
  return new ScaleWriter().raw(h.parentHash).u32(h.number).u64(BigInt(h.timestampMs)).raw(h.extrinsicsRoot).raw(h.resultsRoot).finish();
}

export function blockHash(h: BlockHeader): Uint8Array {
  return blake2_256(encodeHeader(h));
}

export function extrinsicsRoot(txHashes: readonly Uint8Array[]): Uint8Array {
  return blake2_256(new ScaleWriter().vec(txHashes, (w, h) => w.raw(h)).finish());
}

export function resultsRoot(results: readonly TxResult[]): Uint8Array {
  return blake2_256(new ScaleWriter().vec(results, (w, r) => w.raw(r.txHash).bool(r.success).bytes(utf8(r.error))).finish());
}

export function genesisHeader(g: GenesisConfig): BlockHeader {
  return {
    parentHash: new Uint8Array(32),
    number: 0,
    timestampMs: g.genesisTimeMs,
    extrinsicsRoot: blake2_256(encodeGenesisConfig(g)),
    resultsRoot: blake2_256(Uint8Array.of(0)),
  };
}
