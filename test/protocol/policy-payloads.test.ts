/**
 * Policy, persona and application payload codecs (ledger-rules.md §1.4, §4.7–§4.10, §7.1): round trips of every
 * variant, every bound (the bound passes, one more fails), enum indices, option/bool tags, trailing bytes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { concatBytes, utf8 } from '../../src/base/bytes.js';
import { ScaleWriter } from '../../src/codec/scale.js';
import {
  decodeApplicationAuthorization,
  encodeApplicationAuthorization,
  isApplicationDomain,
  isApplicationId,
  type ApplicationAuthorization,
} from '../../src/protocol/payloads/application.js';
import {
  decodePersonaPayload,
  decodePersonaTransferAcceptancePayload,
  encodePersonaPayload,
  encodePersonaTransferAcceptancePayload,
  transferAcceptanceOf,
  type PersonaOperation,
  type PersonaPayload,
} from '../../src/protocol/payloads/persona.js';
import { decodePolicyV2Payload, encodePolicyV2Payload, type PolicyV2Operation, type PolicyV2Payload } from '../../src/protocol/payloads/policy-v2.js';
import { decodePolicyV3Payload, encodePolicyV3Payload, type PolicyV3Payload } from '../../src/protocol/payloads/policy-v3.js';
import { encodeAction } from '../../src/protocol/policy/codec.js';
import type {
  DeliveryPolicy,
  DeliveryStep,
  PolicyCondition,
  PolicyRule,
  PolicyScopeV2,
  PolicyScopeV3,
  RequestedDeliveryConstraints,
  RouteTarget,
} from '../../src/protocol/policy/types.js';
import { PLATFORM } from '../../src/protocol/profile.js';

const DID = 'did:platform:1111111111111111';
const s = (n: number, c = 'a') => c.repeat(n);

const constraints: RequestedDeliveryConstraints = {
  requestedCacheSeconds: 3600,
  maxHttpEnvelopeBytes: 1_000_000,
  maxUnchunkedMessageBytes: 500_000,
  maxChunkBytes: 100_000,
  maxMessageBytes: 4_294_967_295,
  maxChunks: 65_535,
  maxReplicas: 2,
};

const tgt = (i: number): RouteTarget => ({ serviceDid: DID, serviceId: `${DID}#s${i}`, priority: i, weight: 65_535 });
const allConditions: PolicyCondition[] = [
  { kind: 'TagEquals', tag: 'chat' },
  { kind: 'TagPrefix', tag: 'chat/' },
  { kind: 'TagAbsent' },
  { kind: 'RecipientEquals', did: DID },
  { kind: 'RecipientIn', dids: [DID, DID] },
  { kind: 'EventEquals', event: 'RelayAccepted' },
];
const allSteps: DeliveryStep[] = [
  { id: 'f', operation: { kind: 'Forward', targets: [tgt(1)] } },
  { id: 's', operation: { kind: 'Store', targets: [tgt(2), tgt(3)], desiredReplicas: 2, requiredReplicas: 1, selection: 'Weighted' } },
  { id: 'a', operation: { kind: 'Archive', targets: [tgt(4)] } },
  { id: 'x', operation: { kind: 'Send', recipientDid: DID, payloadTemplate: utf8('{"a":1}') } },
  { id: 'c', operation: { kind: 'Call', serviceDid: DID, serviceId: `${DID}#c`, registeredDomain: 'example.com', payloadTemplate: utf8('{}') } },
  { id: 'p', operation: { kind: 'RequireProfile' } },
];
const fullRule: PolicyRule = {
  id: 'r1',
  priority: 4_294_967_295,
  conditions: allConditions,
  action: {
    kind: 'DeliveryPlanV1',
    plan: {
      entryStep: 'f',
      steps: allSteps,
      transitions: [
        { from: 'f', to: 's', trigger: 'Success', mode: 'Next' },
        { from: 'f', to: 'a', trigger: 'Failure', mode: 'Fork' },
        { from: 's', to: 'x', trigger: 'Always', mode: 'Next' },
      ],
    },
  },
  constraintOverrides: {
    requestedCacheSeconds: 1,
    maxHttpEnvelopeBytes: null,
    maxUnchunkedMessageBytes: 2,
    maxChunkBytes: null,
    maxMessageBytes: 3,
    maxChunks: 4,
    maxReplicas: 5,
  },
};
const simpleRules: PolicyRule[] = [
  { id: 'rej', priority: 0, conditions: [], action: { kind: 'RejectV1', reasonCode: 65_535 }, constraintOverrides: null },
  { id: 'base', priority: 1, conditions: [], action: { kind: 'BaseDidDeliveryV1' }, constraintOverrides: null },
];

function policyOf<S extends PolicyScopeV3>(scope: S, p: Partial<DeliveryPolicy<S>> = {}): DeliveryPolicy<S> {
  return {
    policyId: new Uint8Array(32).fill(7),
    scope,
    revision: 18_446_744_073_709_551_615n,
    operatorDid: DID,
    ruleset: [fullRule, ...simpleRules],
    policyTtlSeconds: 300,
    ...p,
  };
}

const v2 = (operation: PolicyV2Operation, p: Partial<PolicyV2Payload> = {}): PolicyV2Payload => ({
  operatorDid: DID,
  operation,
  nonce: 3n,
  validUntil: 1_700_000_060_000n,
  signerKeyId: 'root',
  ...p,
});
const v2Set = (policy: DeliveryPolicy<PolicyScopeV2>) => v2({ kind: 'SetPolicy', policy });
const v2Ok = (p: PolicyV2Payload) => decodePolicyV2Payload(encodePolicyV2Payload(p));

/** Decoding works, equals the value, re-encodes identically; a trailing or missing byte fails. */
function roundTrip<T>(value: T, encode: (v: T) => Uint8Array, decode: (b: Uint8Array) => T | undefined): Uint8Array {
  const bytes = encode(value);
  assert.deepEqual(decode(bytes), value);
  assert.equal(decode(concatBytes(bytes, Uint8Array.of(0))), undefined, 'trailing byte');
  assert.equal(decode(bytes.subarray(0, bytes.length - 1)), undefined, 'truncated');
  return bytes;
}

test('policy v2 payload: the four operations round-trip with every condition, step, action and override', () => {
  const scopes: PolicyScopeV2[] = [
    { kind: 'Did', id: DID },
    { kind: 'Persona', id: 'example.com' },
  ];
  for (const scope of scopes) {
    roundTrip(v2Set(policyOf(scope)), encodePolicyV2Payload, decodePolicyV2Payload);
    roundTrip(v2({ kind: 'ClearPolicy', scope }), encodePolicyV2Payload, decodePolicyV2Payload);
  }
  const a = roundTrip(v2({ kind: 'SetDidConstraints', did: DID, constraints }), encodePolicyV2Payload, decodePolicyV2Payload);
  roundTrip(v2({ kind: 'SetPersonaConstraints', persona: 'example.com', constraints }), encodePolicyV2Payload, decodePolicyV2Payload);
  // operator ‖ 02 ‖ did ‖ 7 constraint fields (5×u32, u16, u8 = 23 bytes) ‖ nonce ‖ valid_until ‖ signer
  assert.equal(a.length, 1 + 29 + 1 + 1 + 29 + 23 + 8 + 8 + 5);
  assert.equal(a[30], 2, 'SetDidConstraints is variant 2');
});

test('policy v3 payload: Set (all three scopes) and Clear round-trip', () => {
  const scopes: PolicyScopeV3[] = [
    { kind: 'Did', id: DID },
    { kind: 'Persona', id: 'example.com' },
    { kind: 'Application', id: 'talaria' },
  ];
  for (const scope of scopes) {
    const base: PolicyV3Payload = {
      operatorDid: DID,
      operation: { kind: 'SetPolicy', policy: policyOf(scope) },
      nonce: 0n,
      validUntil: 1n,
      signerKeyId: s(256),
    };
    roundTrip(base, encodePolicyV3Payload, decodePolicyV3Payload);
    roundTrip({ ...base, operation: { kind: 'ClearPolicy', scope } }, encodePolicyV3Payload, decodePolicyV3Payload);
  }
});

test('policy struct bounds: each bound passes, one more fails (§7.1, §4.7)', () => {
  const did = { kind: 'Did', id: DID } as const;
  const withRule = (r: Partial<PolicyRule>) => v2Set(policyOf(did, { ruleset: [{ ...simpleRules[0]!, ...r }] }));
  const plan = (steps: DeliveryStep[], transitions = [] as Array<{ from: string; to: string; trigger: 'Success'; mode: 'Next' }>, entryStep = 'e') =>
    withRule({ action: { kind: 'DeliveryPlanV1', plan: { entryStep, steps, transitions } } });
  const step = (id: string, op: DeliveryStep['operation']): DeliveryStep => ({ id, operation: op });
  const fwd = (targets: RouteTarget[]) => step('f', { kind: 'Forward', targets });
  const send = (recipientDid: string, template: Uint8Array) => step('x', { kind: 'Send', recipientDid, payloadTemplate: template });
  const call = (serviceId: string, domain: string) =>
    step('c', { kind: 'Call', serviceDid: DID, serviceId, registeredDomain: domain, payloadTemplate: utf8('{}') });
  const tr = { from: 'a', to: 'b', trigger: 'Success', mode: 'Next' } as const;
  const pairs: Array<[string, PolicyV2Payload, PolicyV2Payload]> = [
    ['policy_id', v2Set(policyOf(did, { policyId: new Uint8Array(32) })), v2Set(policyOf(did, { policyId: new Uint8Array(33) }))],
    ['scope DID', v2Set(policyOf({ kind: 'Did', id: s(128) })), v2Set(policyOf({ kind: 'Did', id: s(129) }))],
    ['scope persona', v2Set(policyOf({ kind: 'Persona', id: s(253) })), v2Set(policyOf({ kind: 'Persona', id: s(254) }))],
    ['operator_did', v2Set(policyOf(did, { operatorDid: s(128) })), v2Set(policyOf(did, { operatorDid: s(129) }))],
    [
      'rules',
      v2Set(policyOf(did, { ruleset: Array.from({ length: 32 }, () => simpleRules[0]!) })),
      v2Set(policyOf(did, { ruleset: Array.from({ length: 33 }, () => simpleRules[0]!) })),
    ],
    ['rule id', withRule({ id: s(64) }), withRule({ id: s(65) })],
    [
      'conditions',
      withRule({ conditions: Array.from({ length: 8 }, () => allConditions[2]!) }),
      withRule({ conditions: Array.from({ length: 9 }, () => allConditions[2]!) }),
    ],
    ['tag', withRule({ conditions: [{ kind: 'TagEquals', tag: s(96) }] }), withRule({ conditions: [{ kind: 'TagPrefix', tag: s(97) }] })],
    ['recipient', withRule({ conditions: [{ kind: 'RecipientEquals', did: s(128) }] }), withRule({ conditions: [{ kind: 'RecipientEquals', did: s(129) }] })],
    [
      'RecipientIn',
      withRule({ conditions: [{ kind: 'RecipientIn', dids: Array.from({ length: 16 }, () => DID) }] }),
      withRule({ conditions: [{ kind: 'RecipientIn', dids: Array.from({ length: 17 }, () => DID) }] }),
    ],
    ['entry step', plan([fwd([tgt(1)])], [], s(64)), plan([fwd([tgt(1)])], [], s(65))],
    ['steps', plan(Array.from({ length: 32 }, () => fwd([]))), plan(Array.from({ length: 33 }, () => fwd([])))],
    ['step id', plan([step(s(64), { kind: 'RequireProfile' })]), plan([step(s(65), { kind: 'RequireProfile' })])],
    [
      'transitions',
      plan(
        [],
        Array.from({ length: 64 }, () => tr),
      ),
      plan(
        [],
        Array.from({ length: 65 }, () => tr),
      ),
    ],
    ['transition from', plan([], [{ ...tr, from: s(64) }]), plan([], [{ ...tr, from: s(65) }])],
    ['targets', plan([fwd(Array.from({ length: 16 }, (_v, i) => tgt(i)))]), plan([fwd(Array.from({ length: 17 }, (_v, i) => tgt(i)))])],
    ['target service_id', plan([fwd([{ ...tgt(1), serviceId: s(128) }])]), plan([fwd([{ ...tgt(1), serviceId: s(129) }])])],
    ['target service_did', plan([fwd([{ ...tgt(1), serviceDid: s(128) }])]), plan([fwd([{ ...tgt(1), serviceDid: s(129) }])])],
    ['template', plan([send(DID, new Uint8Array(4096))]), plan([send(DID, new Uint8Array(4097))])],
    ['send recipient', plan([send(s(128), utf8('{}'))]), plan([send(s(129), utf8('{}'))])],
    ['call domain', plan([call('x', s(253))]), plan([call('x', s(254))])],
    ['call service id', plan([call(s(128), 'a.b')]), plan([call(s(129), 'a.b')])],
    ['signer_key_id', v2({ kind: 'ClearPolicy', scope: did }, { signerKeyId: s(256) }), v2({ kind: 'ClearPolicy', scope: did }, { signerKeyId: s(257) })],
    ['payload operator', v2({ kind: 'ClearPolicy', scope: did }, { operatorDid: s(128) }), v2({ kind: 'ClearPolicy', scope: did }, { operatorDid: s(129) })],
    [
      'constraints persona',
      v2({ kind: 'SetPersonaConstraints', persona: s(253), constraints }),
      v2({ kind: 'SetPersonaConstraints', persona: s(254), constraints }),
    ],
  ];
  for (const [name, ok, bad] of pairs) {
    assert.deepEqual(v2Ok(ok), ok, `${name}: the bound decodes`);
    assert.equal(v2Ok(bad), undefined, `${name}: one more fails`);
  }
});

/** `operator ‖ op index ‖ rest ‖ nonce ‖ valid_until ‖ signer` as raw bytes. */
function v2Raw(op: (w: ScaleWriter) => void): Uint8Array {
  const w = new ScaleWriter().str(DID);
  op(w);
  return w.u64(0n).u64(1n).str('root').finish();
}

test('enum indices, option tags, compacts and UTF-8 are strict', () => {
  const ruleWith = (body: (w: ScaleWriter) => void) =>
    v2Raw((w) => {
      w.u8(0).bytes(new Uint8Array(32)).u8(0).str(DID).u64(1n).str(DID).compact(1).str('r').u32(1);
      body(w);
      w.u32(60);
    });
  const noOverrides = (w: ScaleWriter) => w.u8(0);
  // The frame itself decodes: no conditions, BaseDidDelivery, no overrides.
  assert.ok(decodePolicyV2Payload(ruleWith((w) => noOverrides(w.compact(0).u8(2)))));
  const bad: Array<[string, Uint8Array]> = [
    ['v2 operation 4', v2Raw((w) => w.u8(4))],
    ['v2 scope Application', v2Raw((w) => w.u8(1).u8(2).str('talaria'))],
    ['condition 6', ruleWith((w) => noOverrides(w.compact(1).u8(6).u8(2)))],
    ['event 3', ruleWith((w) => noOverrides(w.compact(1).u8(5).u8(3).u8(2)))],
    ['action 3', ruleWith((w) => noOverrides(w.compact(0).u8(3)))],
    ['step operation 6', ruleWith((w) => noOverrides(w.compact(0).u8(0).str('e').compact(1).str('e').u8(6).compact(0)))],
    ['selection 2', ruleWith((w) => noOverrides(w.compact(0).u8(0).str('e').compact(1).str('e').u8(1).compact(0).u8(1).u8(1).u8(2).compact(0)))],
    ['trigger 3', ruleWith((w) => noOverrides(w.compact(0).u8(0).str('e').compact(0).compact(1).str('a').str('b').u8(3).u8(0)))],
    ['mode 2', ruleWith((w) => noOverrides(w.compact(0).u8(0).str('e').compact(0).compact(1).str('a').str('b').u8(0).u8(2)))],
    ['overrides option tag 2', ruleWith((w) => w.compact(0).u8(2).u8(2))],
    ['override field option tag 2', ruleWith((w) => w.compact(0).u8(2).u8(1).u8(2))],
    ['non-minimal compact', ruleWith((w) => noOverrides(w.raw(Uint8Array.of(0x01, 0x00)).u8(2)))],
    ['invalid UTF-8 tag', ruleWith((w) => noOverrides(w.compact(1).u8(0).bytes(Uint8Array.of(0xff)).u8(2)))],
  ];
  for (const [name, bytes] of bad) assert.equal(decodePolicyV2Payload(bytes), undefined, name);
  assert.equal(decodePolicyV3Payload(concatBytes(utf8(''), Uint8Array.of(0x74), utf8(DID), Uint8Array.of(2))), undefined, 'v3 operation 2');
  assert.deepEqual([...encodeAction({ kind: 'RejectV1', reasonCode: 258 })], [1, 2, 1]);
});

const attestation = {
  dnsProofHash: new Uint8Array(32).fill(1),
  challengeNonce: 5n,
  verificationExpiresAt: 1_800_000_000_000n,
  attestor: new Uint8Array(32).fill(2),
  attestationSignature: new Uint8Array(65).fill(3),
};
const transfer: Extract<PersonaOperation, { kind: 'Transfer' }> = {
  kind: 'Transfer',
  persona: 'example.com',
  newOperatorDid: DID,
  newControllerKeyIds: ['root', `${DID}#k`],
  newControllerThreshold: 1,
  constraints,
  attestation,
  newOperatorSignerKeyId: 'root',
  newOperatorSignature: new Uint8Array(64).fill(4),
};
const personaOps: PersonaOperation[] = [
  { kind: 'Register', persona: 'example.com', controllerKeyIds: ['root'], controllerThreshold: 1, constraints: null, attestation },
  { kind: 'Renew', persona: 'example.com', constraints, attestation },
  { kind: 'Revoke', persona: 'example.com' },
  { kind: 'RotateControllers', persona: 'example.com', controllerKeyIds: Array.from({ length: 8 }, (_v, i) => s(256, String(i))), controllerThreshold: 1 },
  transfer,
  { kind: 'RegisterNamed', persona: 'alice', controllerKeyIds: ['root'], controllerThreshold: 1, constraints },
];
const personaPayload = (operation: PersonaOperation): PersonaPayload => ({ operatorDid: DID, operation, nonce: 9n, validUntil: 10n, signerKeyId: 'root' });

test('persona payload: all six operations round-trip with their indices', () => {
  personaOps.forEach((op, i) => {
    const bytes = roundTrip(personaPayload(op), encodePersonaPayload, decodePersonaPayload);
    assert.equal(bytes[30], i, `${op.kind} is variant ${i}`);
  });
  const register = encodePersonaPayload(personaPayload(personaOps[0]!));
  // The 65-byte MultiSignature inside a Bytes: compact 65 = 05 01.
  const i = register.length - 8 - 8 - 5 - 65 - 2;
  assert.deepEqual([register[i], register[i + 1]], [0x05, 0x01]);
});

test('persona payload bounds: persona 253, 8 controllers of 256 bytes, operator 128, signer 256, index 6', () => {
  const ok = decodePersonaPayload;
  const enc = (op: PersonaOperation, p: Partial<PersonaPayload> = {}) => encodePersonaPayload({ ...personaPayload(op), ...p });
  assert.ok(ok(enc({ kind: 'Revoke', persona: s(253) })));
  assert.equal(ok(enc({ kind: 'Revoke', persona: s(254) })), undefined);
  const rot = (ids: string[]) => enc({ kind: 'RotateControllers', persona: 'p', controllerKeyIds: ids, controllerThreshold: 1 });
  assert.equal(ok(rot(Array.from({ length: 9 }, () => 'k'))), undefined);
  assert.equal(ok(rot([s(257)])), undefined);
  assert.equal(ok(enc({ ...transfer, newOperatorDid: s(129) })), undefined);
  assert.equal(ok(enc({ ...transfer, newOperatorSignerKeyId: s(257) })), undefined);
  assert.ok(ok(enc({ kind: 'Revoke', persona: 'p' }, { signerKeyId: s(256) })));
  assert.equal(ok(enc({ kind: 'Revoke', persona: 'p' }, { signerKeyId: s(257) })), undefined);
  assert.equal(ok(enc({ kind: 'Revoke', persona: 'p' }, { operatorDid: s(129) })), undefined);
  const bytes = enc({ kind: 'Revoke', persona: 'p' });
  bytes[30] = 6;
  assert.equal(ok(bytes), undefined);
  const withOption = enc({ kind: 'RegisterNamed', persona: 'p', controllerKeyIds: ['k'], controllerThreshold: 1, constraints: null });
  withOption[1 + 29 + 1 + 2 + 1 + 2 + 1] = 2;
  assert.equal(ok(withOption), undefined, 'constraints option tag 2');
});

test('transfer acceptance payload: rebuilt from the Transfer fields, strict round trip, domain prefix 70', () => {
  const genesis = new Uint8Array(32).fill(9);
  const a = transferAcceptanceOf(PLATFORM, genesis, 'did:platform:current11111111', transfer);
  assert.equal(a.domain, 'platform:persona:transfer:v1');
  assert.equal(a.currentOperatorDid, 'did:platform:current11111111');
  assert.equal(a.challengeNonce, 5n);
  const bytes = roundTrip(a, encodePersonaTransferAcceptancePayload, decodePersonaTransferAcceptancePayload);
  assert.equal(bytes[0], 0x70);
  assert.equal(decodePersonaTransferAcceptancePayload(encodePersonaTransferAcceptancePayload({ ...a, domain: s(65) })), undefined);
});

test('application tuples: the five actions round-trip; the domain string is inside (prefix 80)', () => {
  const auths: ApplicationAuthorization[] = [
    { action: 'register', applicationId: 'talaria', controlDid: DID, status: 'Active', nonce: 0n },
    { action: 'update', applicationId: 'talaria', newControlDid: DID, currentStatus: 'Suspended', nonce: 1n },
    { action: 'status', applicationId: 'talaria', controlDid: DID, newStatus: 'Tombstoned', nonce: 2n },
    { action: 'domain', applicationId: 'talaria', controlDid: DID, domain: 'push.example.com', nonce: 3n },
    { action: 'domain', applicationId: 'talaria', controlDid: DID, domain: null, nonce: 3n },
    { action: 'linked_did', applicationId: 'talaria', controlDid: DID, linkedDid: DID, enabled: true, nonce: 4n },
  ];
  for (const auth of auths) {
    const bytes = encodeApplicationAuthorization(PLATFORM, auth);
    assert.equal(bytes[0], 0x80, '`platform:application-registry:v1` is 32 bytes');
    assert.deepEqual(decodeApplicationAuthorization(bytes), { domain: 'platform:application-registry:v1', authorization: auth });
    assert.equal(decodeApplicationAuthorization(concatBytes(bytes, Uint8Array.of(0))), undefined);
  }
  const reg = encodeApplicationAuthorization(PLATFORM, auths[0]!);
  assert.deepEqual([...reg], [...new ScaleWriter().str('platform:application-registry:v1').str('register').str('talaria').str(DID).u8(0).u64(0n).finish()]);
  const tuple = (f: (w: ScaleWriter) => void) => {
    const w = new ScaleWriter().str('platform:application-registry:v1');
    f(w);
    return w.u64(0n).finish();
  };
  assert.equal(decodeApplicationAuthorization(tuple((w) => w.str('register').str('a').str(DID).u8(1))), undefined, 'register must carry Active');
  assert.equal(decodeApplicationAuthorization(tuple((w) => w.str('status').str('a').str(DID).u8(3))), undefined, 'status 3');
  assert.equal(decodeApplicationAuthorization(tuple((w) => w.str('linked_did').str('a').str(DID).str(DID).u8(2))), undefined, 'bool 2');
  assert.equal(decodeApplicationAuthorization(tuple((w) => w.str('delete').str('a').str(DID))), undefined, 'unknown action');
  assert.equal(decodeApplicationAuthorization(tuple((w) => w.str('status').str(s(65)).str(DID).u8(0))), undefined, 'id ≤ 64');
});

test('application id and domain syntax (§9.2, §5.10)', () => {
  for (const id of ['talaria', 'a', 'a.b-c_d', s(64)]) assert.ok(isApplicationId(id), id);
  for (const id of ['', 'Talaria', 'Talaria Push', 'a/b', s(65), 'é']) assert.ok(!isApplicationId(id), id);
  for (const d of ['example.com', 'a-b.example.co', `${s(63)}.com`, '1.example.com']) assert.ok(isApplicationDomain(d), d);
  for (const d of ['example', 'Example.com', '-a.com', 'a-.com', 'a..com', '.a.com', 'a.com.', `${s(64)}.com`, 'a.123', 'a_b.com', `${s(250)}.com`]) {
    assert.ok(!isApplicationDomain(d), d);
  }
});
