/** Typed loader for ledger-vectors.json (ledger-rules.md §12). */
import { readFileSync } from 'node:fs';

export interface LedgerVectors {
  keys: {
    seed7: { seed_hex: string; public_key_hex: string; multibase_raw: string; multibase_ed01: string };
    seed9: { seed_hex: string; public_key_hex: string };
  };
  valid_until: { ms: string; u64_le_hex: string };
  V1: {
    profile: string;
    did: string;
    action: 'Add';
    alias: string;
    nonce: string;
    valid_until: string;
    signer_key_id: string;
    payload_hex: string;
    signature_hex: string;
    signature_b64: string;
    tx_hash: string;
    openpayload_did: string;
    openpayload_payload_hex: string;
  };
  V2: {
    did: string;
    action: 'AddService';
    service: {
      id: string;
      type: string;
      serviceEndpoint: string[];
      authorization: string[];
      priority: number;
    };
    nonce: string;
    valid_until: string;
    signer_key_id: string;
    payload_hex: string;
    signature_hex: string;
  };
  V3: {
    did: string;
    delete: { action: 'DeleteDid'; nonce: string; valid_until: string; signer_key_id: string; payload_hex: string; signature_hex: string };
    add_device: { action: 'AddDevice'; device_id: string; nonce: string; valid_until: string; signer_key_id: string; payload_hex: string };
  };
  V5: {
    profile: string;
    did: string;
    did_address_bytes_hex: string;
    alias_raw: string;
    alias: string;
    expiry_ms: string;
    token: string;
    document_json: Record<string, unknown>;
    doc_blob_hex: string;
    document_hash_hex: string;
    signed_bytes_hex: string;
    signature_hex: string;
    signature_b64: string;
  };
  V6: {
    profile: string;
    did: string;
    document_nonce: string;
    valid_until: string;
    signer_key_id: string;
    token: string;
    signed_bytes_hex: string;
    signature_hex: string;
  };
  V7: {
    genesis: { profile: string; chain_id: string; genesis_time_ms: string; persona_attestors_hex: string[] };
    genesis_config_hex: string;
    block0_header_hex: string;
    genesis_hash: string;
  };
}

export const vectors: LedgerVectors = JSON.parse(readFileSync(new URL('./ledger-vectors.json', import.meta.url), 'utf8')) as LedgerVectors;

/** Hex → bytes; throws on malformed hex so a typo in the fixture cannot pass silently. */
export function hex(s: string): Uint8Array {
  const body = s.startsWith('0x') ? s.slice(2) : s;
  if (!/^(?:[0-9a-f]{2})*$/.test(body)) throw new Error(`bad hex in fixture: ${s.slice(0, 20)}…`);
  return new Uint8Array(Buffer.from(body, 'hex'));
}
