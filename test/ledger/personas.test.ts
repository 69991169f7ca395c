/**
 * Personas through the ledger (ledger-rules.md §5.9, §8): the DNS lifecycle register → renew → revoke → renew →
 * rotate controllers → transfer with its nonce effects, the attestation checks, and named personas.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { concatBytes } from '../../src/base/bytes.js';
import { getNonce } from '../../src/ledger/records.js';
import { operatorNonce, personaNonce } from '../../src/ledger/runtime/nonces.js';
import { getPersona } from '../../src/ledger/runtime/persona-state.js';
import { getPolicyV2, getPolicyV3 } from '../../src/ledger/runtime/policy-state.js';
import { activePersona, resolveDeliveryPolicy } from '../../src/ledger/runtime/resolution.js';
import { controlCall, Harness, rootSigner, seedKey } from './harness.js';
import {
  actor,
  attest,
  EXPIRES,
  expectFailure,
  personaCall,
  personaScope,
  policyV2,
  policyV3,
  register,
  registerOp,
  requested,
  rule,
  transferOp,
  v2Call,
  v3Call,
} from './policy-harness.js';

const OP = actor(7);
const NEW = actor(8);
const OTHER = actor(11);
const P = 'example.com';
const STRANGER_OP = () => actor(40);

function setup(): Harness {
  const h = new Harness();
  register(h, OP);
  register(h, NEW);
  register(h, OTHER);
  return h;
}

const nonces = (h: Harness) => {
  const v = h.ledger.finalizedView();
  return { persona: personaNonce(v, P), op: operatorNonce(v, OP.did), neu: operatorNonce(v, NEW.did) };
};

test('DNS persona lifecycle: register → renew → revoke → renew → rotate → transfer, with nonce effects', (t) => {
  const h = setup();
  t.after(() => h.close());

  // Register (signed by a proposed controller; challenge = persona nonce 0).
  h.apply(personaCall(h, OP, registerOp(h, P, OP, { controllers: ['root'], constraints: requested({ maxReplicas: 3 }) })));
  let rec = getPersona(h.ledger.finalizedView(), P)!;
  assert.equal(rec.operatorDid, OP.did);
  assert.deepEqual(rec.controllerKeyIds, ['root']);
  assert.equal(rec.revision, 1);
  assert.equal(rec.active, true);
  assert.equal(rec.named, false);
  assert.equal(rec.verificationExpiresAt, Number(EXPIRES));
  assert.equal(rec.verifiedAt, h.ledger.headRef().timestampMs);
  assert.equal(rec.deliveryConstraints!.maxReplicas, 3);
  assert.deepEqual(nonces(h), { persona: 1n, op: 1n, neu: 0n });
  expectFailure(h, personaCall(h, OP, registerOp(h, P, OP)), 'PersonaAlreadyExists');

  // Renew: a stale challenge fails; a fresh one renews and keeps the constraints (None keeps them).
  expectFailure(
    h,
    personaCall(h, OP, { kind: 'Renew', persona: P, constraints: null, attestation: attest(h, P, OP.did, { challengeNonce: 0n }) }),
    'InvalidPersonaNonce',
  );
  h.apply(personaCall(h, OP, { kind: 'Renew', persona: P, constraints: null, attestation: attest(h, P, OP.did, { expiresAt: EXPIRES + 1n }) }));
  rec = getPersona(h.ledger.finalizedView(), P)!;
  assert.equal(rec.revision, 2);
  assert.equal(rec.verificationExpiresAt, Number(EXPIRES) + 1);
  assert.equal(rec.deliveryConstraints!.maxReplicas, 3);
  assert.deepEqual(nonces(h), { persona: 2n, op: 2n, neu: 0n });

  // Revoke: inactive, revision +1, resolution with the persona yields nothing; a second revoke fails.
  h.apply(personaCall(h, OP, { kind: 'Revoke', persona: P }));
  rec = getPersona(h.ledger.finalizedView(), P)!;
  assert.deepEqual([rec.active, rec.revision], [false, 3]);
  assert.equal(activePersona(h.ledger.finalizedView(), h.clock.nowMs(), P).ok, false);
  expectFailure(h, personaCall(h, OP, { kind: 'Revoke', persona: P }), 'PersonaInactive');
  expectFailure(h, personaCall(h, OP, { kind: 'RotateControllers', persona: P, controllerKeyIds: ['root'], controllerThreshold: 1 }), 'PersonaInactive');
  assert.deepEqual(nonces(h), { persona: 2n, op: 3n, neu: 0n }, 'failures consume nothing');

  // Renew again reactivates (persona nonce 2 → 3).
  h.apply(personaCall(h, OP, { kind: 'Renew', persona: P, constraints: requested({ maxReplicas: 1 }), attestation: attest(h, P, OP.did) }));
  rec = getPersona(h.ledger.finalizedView(), P)!;
  assert.deepEqual([rec.active, rec.revision, rec.deliveryConstraints!.maxReplicas], [true, 4, 1]);
  assert.deepEqual(nonces(h), { persona: 3n, op: 4n, neu: 0n });

  // Staged rotation: the new set must contain the signer; #k2 joins, then #k2 removes root.
  expectFailure(
    h,
    personaCall(h, OP, { kind: 'RotateControllers', persona: P, controllerKeyIds: [OP.k2.keyId], controllerThreshold: 1 }),
    'InvalidPersonaController',
  );
  expectFailure(
    h,
    personaCall(h, OP, { kind: 'RotateControllers', persona: P, controllerKeyIds: ['root', 'root'], controllerThreshold: 1 }),
    'InvalidPersonaController',
  );
  h.apply(personaCall(h, OP, { kind: 'RotateControllers', persona: P, controllerKeyIds: ['root', OP.k2.keyId], controllerThreshold: 1 }));
  h.apply(personaCall(h, OP, { kind: 'RotateControllers', persona: P, controllerKeyIds: [OP.k2.keyId], controllerThreshold: 1 }, { signer: OP.k2 }));
  rec = getPersona(h.ledger.finalizedView(), P)!;
  assert.deepEqual([rec.controllerKeyIds, rec.revision], [[OP.k2.keyId], 6]);
  expectFailure(h, personaCall(h, OP, { kind: 'Revoke', persona: P }), 'InvalidPersonaController');
  assert.deepEqual(nonces(h), { persona: 3n, op: 6n, neu: 0n });

  // Persona policies exist before the transfer.
  h.apply(v2Call(h, OP, { kind: 'SetPolicy', policy: policyV2(personaScope(P), OP.did, [rule('p')]) }, { signer: OP.k2 }));
  assert.ok(getPolicyV3(h.ledger.finalizedView(), personaScope(P)));

  // Transfer: outer signature by a current controller, acceptance by the new operator's key in the new set.
  const bad = transferOp(h, P, OP, NEW, { acceptanceKey: seedKey(99) });
  expectFailure(h, personaCall(h, OP, bad, { signer: OP.k2 }), 'InvalidSignature');
  expectFailure(h, personaCall(h, OP, transferOp(h, P, OP, OP), { signer: OP.k2 }), 'InvalidPersonaController');
  expectFailure(h, personaCall(h, OP, transferOp(h, P, OP, NEW, { controllers: [NEW.k2.keyId] }), { signer: OP.k2 }), 'InvalidPersonaController');
  h.apply(personaCall(h, OP, transferOp(h, P, OP, NEW, { signer: NEW.k2, controllers: ['root', NEW.k2.keyId] }), { signer: OP.k2 }));
  rec = getPersona(h.ledger.finalizedView(), P)!;
  assert.equal(rec.operatorDid, NEW.did);
  assert.deepEqual(rec.controllerKeyIds, ['root', NEW.k2.keyId]);
  assert.equal(rec.revision, 7);
  assert.equal(rec.deliveryConstraints, null, 'transfer without constraints clears them');
  assert.deepEqual(nonces(h), { persona: 4n, op: 7n, neu: 0n }, "the current operator's nonce advances");
  const view = h.ledger.finalizedView();
  assert.equal(getPolicyV2(view, personaScope(P)), undefined, 'v2 policy removed');
  assert.equal(getPolicyV3(view, personaScope(P)), undefined, 'v3 policy removed');

  // The new operator now controls the persona; the old one does not.
  expectFailure(h, personaCall(h, OP, { kind: 'Revoke', persona: P }, { signer: OP.k2 }), 'InvalidPersonaController');
  h.apply(v3Call(h, NEW, { kind: 'SetPolicy', policy: policyV3(personaScope(P), NEW.did, [rule('n')]) }));
  h.apply(personaCall(h, NEW, { kind: 'Revoke', persona: P }));
  assert.deepEqual(nonces(h), { persona: 4n, op: 7n, neu: 1n });
});

test('attestation checks in order: nonce, expiry, approved attestor, signature (§8.3)', (t) => {
  const h = setup();
  t.after(() => h.close());
  const reg = (o: Parameters<typeof attest>[3], persona = P) => personaCall(h, OP, registerOp(h, persona, OP, { attestation: attest(h, persona, OP.did, o) }));
  expectFailure(h, reg({ challengeNonce: 1n }), 'InvalidPersonaNonce');
  expectFailure(h, reg({ expiresAt: BigInt(h.clock.nowMs()) }), 'PersonaVerificationExpired');
  expectFailure(h, reg({ attestorKey: seedKey(10) }), 'PersonaAttestorNotApproved');
  expectFailure(h, reg({ signedOperator: OTHER.did }), 'InvalidPersonaAttestation');
  expectFailure(h, reg({ signedPersona: 'example.org' }), 'InvalidPersonaAttestation');
  const good = attest(h, P, OP.did);
  const sr25519 = { ...good, attestationSignature: concatBytes(Uint8Array.of(1), good.attestationSignature.subarray(1)) };
  expectFailure(h, personaCall(h, OP, registerOp(h, P, OP, { attestation: sr25519 })), 'InvalidPersonaAttestation');
  const short = { ...good, attestationSignature: good.attestationSignature.subarray(1) };
  expectFailure(h, personaCall(h, OP, registerOp(h, P, OP, { attestation: short })), 'InvalidPersonaAttestation');
  h.apply(personaCall(h, OP, registerOp(h, P, OP, { attestation: good })));
});

test('register: signer gate, name rules, controller set, constraints (§5.9 step 7, §8.5)', (t) => {
  const h = setup();
  t.after(() => h.close());
  const op = (o: Partial<ReturnType<typeof registerOp>>) => ({ ...registerOp(h, o.persona ?? P, OP), ...o });
  expectFailure(h, personaCall(h, OP, op({ controllerKeyIds: [OP.k2.keyId] })), 'InvalidPersonaController');
  expectFailure(h, personaCall(h, OP, op({ controllerThreshold: 2 })), 'InvalidPersonaController');
  expectFailure(h, personaCall(h, OP, op({ controllerKeyIds: ['root', ''] })), 'InvalidPersonaController');
  expectFailure(h, personaCall(h, OP, op({ persona: 'Example.com', attestation: attest(h, 'Example.com', OP.did) })), 'InvalidPersona');
  expectFailure(h, personaCall(h, OP, op({ persona: 'alice', attestation: attest(h, 'alice', OP.did) })), 'InvalidPersona');
  expectFailure(h, personaCall(h, OP, op({ persona: '127.0.0.1', attestation: attest(h, '127.0.0.1', OP.did) })), 'InvalidPersona');
  expectFailure(h, personaCall(h, OP, op({ constraints: requested({ maxReplicas: 0 }) })), 'InvalidConstraints');
  expectFailure(h, personaCall(h, STRANGER_OP(), op({})), 'DidNotFound');
  expectFailure(h, personaCall(h, OP, op({}), { nonce: 1n }), 'InvalidPersonaOperatorNonce');
  expectFailure(h, personaCall(h, OP, op({}), { validUntil: 1n }), 'PolicyAuthorizationExpired');
  expectFailure(h, personaCall(h, OP, op({}), { callSignerKeyId: 'x'.repeat(257) }), 'InvalidPersonaPayload');
  expectFailure(h, personaCall(h, OP, op({}), { signature: new Uint8Array(64) }), 'InvalidSignature');
  expectFailure(h, personaCall(h, OP, { kind: 'Renew', persona: P, constraints: null, attestation: attest(h, P, OP.did) }), 'PersonaNotFound');
  assert.equal(getNonce(h.ledger.poolView(), 'operator_nonce', OP.did), 0n);
});

test('named personas: no attestation, persona nonce untouched, never expire, cannot be renewed', (t) => {
  const h = setup();
  t.after(() => h.close());
  const named = (persona: string) => ({ kind: 'RegisterNamed' as const, persona, controllerKeyIds: ['root'], controllerThreshold: 1, constraints: null });
  expectFailure(h, personaCall(h, OP, named('a.example')), 'InvalidPersona');
  expectFailure(h, personaCall(h, OP, named('Alice')), 'InvalidPersona');
  h.apply(personaCall(h, OP, named('alice')));
  h.apply(personaCall(h, OP, named('42')));
  const rec = getPersona(h.ledger.finalizedView(), 'alice')!;
  assert.deepEqual(
    [rec.named, rec.active, rec.verifiedAt, rec.verificationExpiresAt, rec.revision, [...rec.dnsProofHash]],
    [true, true, 0, 0, 1, new Array(32).fill(0)],
  );
  assert.equal(personaNonce(h.ledger.finalizedView(), 'alice'), 0n);
  assert.equal(operatorNonce(h.ledger.finalizedView(), OP.did), 2n);
  expectFailure(h, personaCall(h, OP, named('alice')), 'PersonaAlreadyExists');
  expectFailure(h, personaCall(h, OP, { kind: 'Renew', persona: 'alice', constraints: null, attestation: attest(h, 'alice', OP.did) }), 'InvalidPersona');

  h.clock.advance(10 * 365 * 86_400_000);
  assert.equal(activePersona(h.ledger.finalizedView(), h.clock.nowMs(), 'ALICE').ok, true, 'never expires; lookups canonicalise');
  h.apply(v3Call(h, OP, { kind: 'SetPolicy', policy: policyV3(personaScope('alice'), OP.did, [rule('n')]) }, { validUntil: BigInt(h.clock.nowMs() + 60_000) }));
  assert.equal(resolveDeliveryPolicy(h.ledger.finalizedView(), h.clock.nowMs(), OTHER.did, 'alice', null)?.ruleId, 'n');
});

test('an expired DNS persona keeps active = true but fails active_persona; renewal restores it', (t) => {
  const h = setup();
  t.after(() => h.close());
  const expiresAt = BigInt(h.clock.nowMs() + 5_000);
  h.apply(personaCall(h, OP, registerOp(h, P, OP, { attestation: attest(h, P, OP.did, { expiresAt }) })));
  h.clock.advance(10_000);
  const v = h.ledger.finalizedView();
  assert.equal(getPersona(v, P)!.active, true);
  assert.deepEqual(activePersona(v, h.clock.nowMs(), P), { ok: false, error: 'PersonaVerificationExpired' });
  expectFailure(h, personaCall(h, OP, transferOp(h, P, OP, NEW)), 'PersonaVerificationExpired');
  h.apply(personaCall(h, OP, { kind: 'Revoke', persona: P }));
  h.apply(personaCall(h, OP, { kind: 'Renew', persona: P, constraints: null, attestation: attest(h, P, OP.did) }));
  assert.equal(activePersona(h.ledger.finalizedView(), h.clock.nowMs(), P).ok, true);
});

test("a deactivated operator's personas become unmanageable", (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(personaCall(h, OTHER, registerOp(h, P, OTHER)));
  h.apply(controlCall(OTHER.did, { kind: 'DeactivateDid' }, rootSigner(OTHER.key)));
  expectFailure(h, personaCall(h, OTHER, { kind: 'Revoke', persona: P }), 'DidNotFound');
  expectFailure(h, personaCall(h, OP, transferOp(h, P, OTHER, NEW)), 'InvalidPersonaController');
  assert.ok(getPersona(h.ledger.finalizedView(), P)!.active);
});

test('hazard 6: a named persona can be transferred with an attestation and stays named', (t) => {
  const h = setup();
  t.after(() => h.close());
  h.apply(personaCall(h, OP, { kind: 'RegisterNamed', persona: 'alice', controllerKeyIds: ['root'], controllerThreshold: 1, constraints: null }));
  h.apply(personaCall(h, OP, transferOp(h, 'alice', OP, NEW)));
  const rec = getPersona(h.ledger.finalizedView(), 'alice')!;
  assert.deepEqual([rec.operatorDid, rec.named, rec.revision], [NEW.did, true, 2]);
  assert.equal(personaNonce(h.ledger.finalizedView(), 'alice'), 1n);
  expectFailure(h, personaCall(h, NEW, { kind: 'Renew', persona: 'alice', constraints: null, attestation: attest(h, 'alice', NEW.did) }), 'InvalidPersona');
});
