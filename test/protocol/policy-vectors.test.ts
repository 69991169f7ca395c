/** Vectors V4 (policy ids, every row) and V7 (persona attestation) of ledger-rules.md §12. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { to0x, toHex } from '../../src/base/bytes.js';
import { keyPairFromSeed } from '../../src/crypto/ed25519.js';
import { blockHash, genesisHeader } from '../../src/ledger/block.js';
import { isValidPersonaAttestation } from '../../src/ledger/runtime/personas.js';
import {
  decodePersonaAttestationPayload,
  dnsProofHash,
  ed25519MultiSignature,
  encodePersonaAttestationPayload,
  personaAttestationPayload,
} from '../../src/protocol/payloads/persona.js';
import { decodePolicyV3, encodeScope } from '../../src/protocol/policy/codec.js';
import { policyIdV2, policyIdV3 } from '../../src/protocol/policy/policy-id.js';
import type { PolicyScopeV2, PolicyScopeV3 } from '../../src/protocol/policy/types.js';
import { makeProfile } from '../../src/protocol/profile.js';
import { hex, vectors as LV } from '../vectors/ledger-vectors.js';

interface PolicyVectors {
  V4: Array<{ profile: string; scope: PolicyScopeV3; scale_hex: string; v3: string; v2: string | null }>;
  V7: {
    attestor_seed_hex: string;
    genesis_hash: string;
    persona: string;
    operator_did: string;
    record_name: string;
    record_value: string;
    dns_proof_hash_hex: string;
    challenge_nonce: string;
    verification_expires_at: string;
    attestation_payload_hex: string;
    attestation_signature_hex: string;
  };
}

const V: PolicyVectors = JSON.parse(readFileSync(new URL('../vectors/policy-vectors.json', import.meta.url), 'utf8'));

for (const row of V.V4) {
  test(`V4 ${row.profile} ${row.scope.kind}(${row.scope.id}): SCALE(scope) and policy ids`, () => {
    const profile = makeProfile(row.profile);
    assert.equal(toHex(encodeScope(row.scope)), row.scale_hex);
    assert.equal(to0x(policyIdV3(profile, row.scope)), row.v3);
    if (row.v2 !== null) assert.equal(to0x(policyIdV2(profile, row.scope as PolicyScopeV2)), row.v2);
    // The ids depend on the profile: the other profile never reproduces them.
    const other = makeProfile(row.profile === 'platform' ? 'openpayload' : 'platform');
    assert.notEqual(to0x(policyIdV3(other, row.scope)), row.v3);
  });
}

test('V4: v3 policy structs carry the id as a bounded vector (80 ‖ 32 bytes)', () => {
  const row = V.V4[0]!;
  const bytes = hex(`80${row.v3.slice(2)}${row.scale_hex}${'01'.padEnd(16, '0')}${'74'}${toHex(new TextEncoder().encode(row.scope.id))}0078000000`);
  const p = decodePolicyV3(bytes);
  assert.equal(to0x(p.policyId), row.v3);
  assert.deepEqual(p.scope, row.scope);
  assert.equal(p.revision, 1n);
  assert.equal(p.policyTtlSeconds, 120);
});

test('V7: genesis hash, dns_proof_hash, attestation payload bytes and the attestor signature', () => {
  const v = V.V7;
  const genesis = LV.V7.genesis;
  const g = genesisHeader({
    profile: genesis.profile,
    chainId: genesis.chain_id,
    genesisTimeMs: Number(genesis.genesis_time_ms),
    personaAttestors: genesis.persona_attestors_hex.map(hex),
  });
  assert.equal(to0x(blockHash(g)), v.genesis_hash);

  const profile = makeProfile('platform');
  const proof = dnsProofHash(v.record_name, v.record_value);
  assert.equal(toHex(proof), v.dns_proof_hash_hex);
  const payload = personaAttestationPayload(profile, {
    genesisHash: hex(v.genesis_hash.slice(2)),
    persona: v.persona,
    operatorDid: v.operator_did,
    dnsProofHash: proof,
    challengeNonce: BigInt(v.challenge_nonce),
    verificationExpiresAt: BigInt(v.verification_expires_at),
  });
  const bytes = encodePersonaAttestationPayload(payload);
  assert.equal(toHex(bytes), v.attestation_payload_hex);
  assert.deepEqual(decodePersonaAttestationPayload(bytes), payload);

  const attestor = keyPairFromSeed(hex(v.attestor_seed_hex));
  assert.equal(toHex(attestor.publicKey), LV.keys.seed9.public_key_hex);
  const multi = ed25519MultiSignature(attestor.sign(bytes));
  assert.equal(toHex(multi), v.attestation_signature_hex);
  assert.equal(multi.length, 65);

  const fields = {
    dnsProofHash: proof,
    challengeNonce: 0n,
    verificationExpiresAt: BigInt(v.verification_expires_at),
    attestor: attestor.publicKey,
    attestationSignature: hex(v.attestation_signature_hex),
  };
  const gh = hex(v.genesis_hash.slice(2));
  assert.equal(isValidPersonaAttestation(profile, gh, v.persona, v.operator_did, fields), true);
  assert.equal(isValidPersonaAttestation(profile, gh, 'example.org', v.operator_did, fields), false);
  assert.equal(isValidPersonaAttestation(profile, gh, v.persona, v.operator_did, { ...fields, challengeNonce: 1n }), false);
  assert.equal(isValidPersonaAttestation(makeProfile('openpayload'), gh, v.persona, v.operator_did, fields), false);
  assert.equal(isValidPersonaAttestation(profile, new Uint8Array(32), v.persona, v.operator_did, fields), false);
  const sr = hex(`01${v.attestation_signature_hex.slice(2)}`);
  assert.equal(isValidPersonaAttestation(profile, gh, v.persona, v.operator_did, { ...fields, attestationSignature: sr }), false);
});
