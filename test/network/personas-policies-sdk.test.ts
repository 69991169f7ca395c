/**
 * Personas, delivery policies (v2 and v3) and applications end to end over real HTTP: a real node
 * (`startTestNode`, the composition root), a loopback test DNS server the Directory asks for persona TXT records,
 * and only the SDK (PersonaClient, PolicyClient, ApplicationClient, DirectoryClient) with keys that never leave the
 * test. Every write waits for finalization and the finalized state is read back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationClient } from '../../src/client/application-client.js';
import { DirectoryClient } from '../../src/client/directory-client.js';
import { DirectoryApiError } from '../../src/client/http.js';
import { didDocumentFor, ed25519VerificationMethod, keyPairFromSeed, type Ed25519KeyPair } from '../../src/client/keys.js';
import { PersonaClient, type Signer } from '../../src/client/persona-client.js';
import { PolicyClient } from '../../src/client/policy-client.js';
import type { SubmitResponse } from '../../src/client/types.js';
import { generateDid } from '../../src/protocol/did.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { startTestNode, type TestNode } from '../support/network.js';

type Json = Record<string, unknown>;

const seed = (n: number) => new Uint8Array(32).fill(n);
const DAY_MS = 86_400_000;

interface Party {
  did: string;
  key: Ed25519KeyPair;
  root: Signer;
}

async function rejects(p: Promise<unknown>, status: number, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof DirectoryApiError, `expected DirectoryApiError, got ${String(e)}`);
    assert.equal(e.status, status, e.message);
    assert.equal(e.code, code, e.message);
    return true;
  });
}

const forward = (svcDid: string, fragment: string): Json => ({
  type: 'DeliveryPlan/v1',
  entry_step: 'fwd',
  steps: [{ id: 'fwd', operation: 'Forward', targets: [{ service_did: svcDid, service_id: `${svcDid}#${fragment}` }] }],
  transitions: [],
});

const constraints: Json = {
  requested_cache_seconds: 3600,
  max_http_envelope_bytes: 1_000_000,
  max_unchunked_message_bytes: 500_000,
  max_chunk_bytes: 100_000,
  max_replicas: 2,
};

describe('personas, policies and applications over HTTP with the SDK', () => {
  let dns: TestDnsServer;
  let node: TestNode;
  let dir: DirectoryClient;
  let personas: PersonaClient;
  let policies: PolicyClient;
  let apps: ApplicationClient;
  let opA: Party;
  let opB: Party;
  let recipient: Party;
  let svc: Party;
  let linked: Party;
  let v2Did: Party;
  const k2 = keyPairFromSeed(seed(90));
  const PERSONA = 'brand.example.com';
  const APP = 'acme-app';

  const wait = async <R extends SubmitResponse>(p: Promise<R>): Promise<R> => {
    const sub = await p;
    assert.equal(sub.status, 'accepted');
    const tx = await dir.waitForTransaction(sub.tx_hash, { intervalMs: 20, timeoutMs: 30_000 });
    assert.equal(tx.status, 'finalized');
    return sub;
  };

  async function party(n: number, opts: { keyAgreement?: boolean; services?: string[] } = {}): Promise<Party> {
    const did = generateDid(PLATFORM, seed(n).slice(0, 16));
    const key = keyPairFromSeed(seed(n));
    const didDocument = didDocumentFor(did, key.publicKey, {
      keyAgreementPublicKey: opts.keyAgreement ? seed(n + 100) : undefined,
      services: opts.services?.map((f) => ({ id: `${did}#${f}`, type: PLATFORM.relayServiceType, serviceEndpoint: [`https://${f}.relays.example.net/ddn`] })),
    });
    const sub = await dir.register({ did, key, didDocument });
    await dir.waitForTransaction(sub.tx_hash, { intervalMs: 20, timeoutMs: 30_000 });
    return { did, key, root: { key, keyId: 'root' } };
  }

  /** Creates a challenge, checks the record it asks for, and publishes it in the test DNS server. */
  async function publishedChallenge(operatorDid: string, action: 'register_persona' | 'renew_persona' | 'transfer_persona'): Promise<Json> {
    const ch = await personas.createChallenge(PERSONA, operatorDid, action);
    assert.equal(ch.record_name, `_platform-persona.${PERSONA}`);
    assert.equal(ch.record_type, 'TXT');
    assert.match(ch.record_value as string, /^platform-persona-verification=[A-Za-z0-9_-]{43}$/);
    assert.equal(ch.action, action);
    dns.setTxt(ch.record_name as string, ch.record_value as string);
    return ch;
  }

  before(async () => {
    dns = await startDnsServer();
    node = await startTestNode(['--dns-server', dns.server, '--allow-private-endpoints']);
    const url = node.urls.directory!;
    dir = new DirectoryClient(url, { profile: PLATFORM });
    personas = new PersonaClient(url, PLATFORM);
    policies = new PolicyClient(url, PLATFORM);
    apps = new ApplicationClient(url, PLATFORM);
    opA = await party(1);
    opB = await party(2);
    recipient = await party(3, { keyAgreement: true });
    svc = await party(4, { services: ['relay-a', 'relay-b'] });
    linked = await party(5);
    v2Did = await party(6, { keyAgreement: true });
  });
  after(async () => {
    await node?.stop();
    await dns?.close();
  });

  // ------------------------------------------------------------------ personas

  it('registers a DNS persona: challenge, TXT record, verification, signature, PUT', async () => {
    await rejects(personas.read(PERSONA), 404, 'persona_not_found');
    // Not yet published: the Directory's DNS check fails.
    const unpublished = await personas.createChallenge(PERSONA, opA.did, 'register_persona');
    await rejects(
      personas.registerDns(PERSONA, { challengeId: unpublished.challenge_id as string, operatorDid: opA.did, signer: opA.root, controllerKeys: ['root'] }),
      422,
      'dns_verification_failed',
    );
    assert.ok(dns.queries.includes(`_platform-persona.${PERSONA}`), 'the Directory asked the test DNS server');

    const ch = await publishedChallenge(opA.did, 'register_persona');
    const sub = await wait(
      personas.registerDns(PERSONA, {
        challengeId: ch.challenge_id as string,
        operatorDid: opA.did,
        signer: opA.root,
        controllerKeys: ['root'],
        verificationDays: 30,
        deliveryConstraints: constraints,
      }),
    );
    assert.equal(sub.operation, 'Register');
    const rec = await personas.read(PERSONA);
    assert.equal(rec.name, PERSONA);
    assert.equal(rec.kind, 'dns');
    assert.equal(rec.dns_required, true);
    assert.equal(rec.operator_did, opA.did);
    assert.deepEqual(rec.controller_keys, ['root']);
    assert.equal(rec.active, true);
    assert.equal(rec.deliverable, true);
    assert.equal(rec.expired, false);
    assert.match(rec.dns_proof_hash as string, /^0x[0-9a-f]{64}$/);
    const validity = (rec.verification_expires_at as number) - (rec.verified_at as number);
    assert.ok(Math.abs(validity - 30 * DAY_MS) < 60_000, `30 days of validity, got ${validity} ms`);
    assert.deepEqual(rec.pending_operations, []);
    const stored = rec.delivery_constraints as Json;
    for (const [k, v] of Object.entries(constraints)) assert.equal(stored[k], v, k);
    assert.equal((await personas.challenge(PERSONA, ch.challenge_id as string)).status, 'used');
    const nonces = await personas.nonces(PERSONA);
    assert.equal(nonces.operator_did, opA.did);
    assert.equal((await personas.operatorNonce(opA.did)).operator_nonce, '1');
  });

  it('renews, revokes, and renews again (reactivation under the same operator)', async () => {
    const before = await personas.read(PERSONA);
    let ch = await publishedChallenge(opA.did, 'renew_persona');
    const renewed = await wait(
      personas.registerDns(PERSONA, { challengeId: ch.challenge_id as string, operatorDid: opA.did, renew: true, signer: opA.root, verificationDays: 60 }),
    );
    assert.equal(renewed.operation, 'Renew');
    let rec = await personas.read(PERSONA);
    assert.equal(rec.revision, (before.revision as number) + 1);
    assert.ok((rec.verification_expires_at as number) > (before.verification_expires_at as number) + 29 * DAY_MS);
    assert.deepEqual(rec.controller_keys, ['root']);

    await wait(personas.revoke(PERSONA, { operatorDid: opA.did, signer: opA.root }));
    rec = await personas.read(PERSONA);
    assert.equal(rec.active, false);
    assert.equal(rec.deliverable, false);
    assert.equal(rec.operator_did, opA.did);
    await rejects(personas.revoke(PERSONA, { operatorDid: opA.did, signer: opA.root }), 409, 'persona_inactive');

    ch = await publishedChallenge(opA.did, 'renew_persona');
    await wait(personas.registerDns(PERSONA, { challengeId: ch.challenge_id as string, operatorDid: opA.did, renew: true, signer: opA.root }));
    rec = await personas.read(PERSONA);
    assert.equal(rec.active, true);
    assert.equal(rec.deliverable, true);
    assert.equal(rec.operator_did, opA.did);
    assert.deepEqual(rec.controller_keys, ['root'], 'renewal keeps the controller set');
  });

  it('rotates the controllers; the new controller key then signs', async () => {
    await wait(dir.addVerificationMethod(opA.did, opA.key, 'root', { verification_method: ed25519VerificationMethod(opA.did, 'k2', k2.publicKey) }));
    const k2Id = `${opA.did}#k2`;
    // Not a controller yet.
    await rejects(personas.revoke(PERSONA, { operatorDid: opA.did, signer: { key: k2, keyId: k2Id } }), 403, 'signer_not_authorized');
    const rotated = await wait(personas.rotateControllers(PERSONA, { operatorDid: opA.did, signer: opA.root, controllerKeys: ['root', k2Id] }));
    assert.equal(rotated.operation, 'RotateControllers');
    assert.deepEqual((await personas.read(PERSONA)).controller_keys, ['root', k2Id]);
    // A staged rotation down to #k2 alone, signed by #k2 (in both sets).
    await wait(personas.rotateControllers(PERSONA, { operatorDid: opA.did, signer: { key: k2, keyId: k2Id }, controllerKeys: [k2Id] }));
    assert.deepEqual((await personas.read(PERSONA)).controller_keys, [k2Id]);
    await rejects(personas.revoke(PERSONA, { operatorDid: opA.did, signer: opA.root }), 403, 'signer_not_authorized');
  });

  it('transfers the persona to a second operator (acceptance signed by the new operator)', async () => {
    const ch = await publishedChallenge(opB.did, 'transfer_persona');
    assert.equal(ch.current_operator_did, opA.did);
    // A signature by someone else than the new operator is refused by the Directory.
    const forged = await personas.acceptTransfer(PERSONA, {
      challengeId: ch.challenge_id as string,
      newOperatorDid: opB.did,
      signer: { key: opA.key, keyId: 'root' },
      controllerKeys: ['root'],
    });
    await rejects(
      personas.completeTransfer(PERSONA, {
        challengeId: ch.challenge_id as string,
        operatorDid: opA.did,
        newOperatorSignature: forged.new_operator_signature,
        signer: { key: k2, keyId: `${opA.did}#k2` },
      }),
      403,
      'invalid_signature',
    );
    // Verifying again replaces the intent (and the acceptance payload); the new operator signs that one.
    const accepted = await personas.acceptTransfer(PERSONA, {
      challengeId: ch.challenge_id as string,
      newOperatorDid: opB.did,
      signer: opB.root,
      controllerKeys: ['root'],
    });
    assert.equal(accepted.challenge_id, ch.challenge_id);
    const done = await wait(
      personas.completeTransfer(PERSONA, {
        challengeId: ch.challenge_id as string,
        operatorDid: opA.did,
        newOperatorSignature: accepted.new_operator_signature,
        signer: { key: k2, keyId: `${opA.did}#k2` },
      }),
    );
    assert.equal(done.operation, 'Transfer');
    const rec = await personas.read(PERSONA);
    assert.equal(rec.operator_did, opB.did);
    assert.deepEqual(rec.controller_keys, ['root']);
    assert.equal(rec.deliverable, true);
    assert.equal((await personas.nonces(PERSONA)).operator_did, opB.did);
    // The former operator controls nothing any more.
    await rejects(personas.revoke(PERSONA, { operatorDid: opA.did, signer: { key: k2, keyId: `${opA.did}#k2` } }), 403, 'invalid_persona_controller');
  });

  it('registers a named persona', async () => {
    await rejects(personas.registerNamed('brand.example.org', { operatorDid: opA.did, signer: opA.root, controllerKeys: ['root'] }), 400, 'persona_not_dns');
    const sub = await wait(
      personas.registerNamed('Acme', { operatorDid: opA.did, signer: opA.root, controllerKeys: ['root'], deliveryConstraints: constraints }),
    );
    assert.equal(sub.operation, 'RegisterNamed');
    const rec = await personas.read('acme');
    assert.equal(rec.name, 'acme');
    assert.equal(rec.kind, 'named');
    assert.equal(rec.dns_required, false);
    assert.equal(rec.dns_proof_hash, null);
    assert.equal(rec.verified_at, 0);
    assert.equal(rec.operator_did, opA.did);
    assert.equal(rec.deliverable, true);
    const stored = rec.delivery_constraints as Json;
    for (const [k, v] of Object.entries(constraints)) assert.equal(stored[k], v, k);
    await rejects(personas.registerNamed('acme', { operatorDid: opB.did, signer: opB.root, controllerKeys: ['root'] }), 409, 'persona_already_exists');
  });

  // ------------------------------------------------------------------ policies

  it('sets a v3 DID policy and a v3 persona policy, reads them back, and delivery resolution picks the winner', async () => {
    const didPolicy: Json = {
      scope: { type: 'DID', id: recipient.did },
      operator_did: recipient.did,
      policy_ttl_seconds: 120,
      ruleset: [{ id: 'did-default', priority: 1, conditions: [], action: forward(svc.did, 'relay-a') }],
    };
    const setDid = await wait(policies.writeV3({ type: 'did', id: recipient.did }, { policy: didPolicy, signer: recipient.root }));
    assert.equal(setDid.operation, 'SetPolicy');
    const readDid = await policies.readV3({ type: 'did', id: recipient.did });
    const storedDid = readDid.policy as Json;
    assert.deepEqual(readDid.scope, { type: 'DID', id: recipient.did });
    assert.deepEqual(storedDid.scope, { type: 'DID', id: recipient.did });
    assert.equal(storedDid.revision, 1);
    assert.equal(storedDid.operator_did, recipient.did);
    assert.equal(storedDid.policy_ttl_seconds, 120);
    assert.match(storedDid.policy_id as string, /^0x[0-9a-f]{64}$/);
    assert.deepEqual(
      (storedDid.ruleset as Json[]).map((r) => r.id),
      ['did-default'],
    );
    assert.equal(((storedDid.ruleset as Json[])[0]!.action as Json).entry_step, 'fwd');
    assert.deepEqual(await policies.nonceV3({ type: 'did', id: recipient.did }), {
      scope: { type: 'DID', id: recipient.did },
      operator_did: recipient.did,
      nonce: '1',
    });

    const personaPolicy: Json = {
      scope: { type: 'PERSONA', id: PERSONA },
      operator_did: opB.did,
      policy_ttl_seconds: 60,
      ruleset: [{ id: 'persona-invoice', priority: 1, conditions: [{ type: 'TagEquals', value: 'invoice' }], action: forward(svc.did, 'relay-b') }],
    };
    // The former operator may not write it.
    await rejects(
      policies.writeV3({ type: 'persona', id: PERSONA }, { policy: { ...personaPolicy, operator_did: opA.did }, signer: opA.root, operatorDid: opA.did }),
      403,
      'invalid_policy_scope',
    );
    await wait(policies.writeV3({ type: 'persona', id: PERSONA }, { policy: personaPolicy, signer: opB.root, operatorDid: opB.did }));
    const storedPersona = (await policies.readV3({ type: 'persona', id: PERSONA })).policy as Json;
    assert.deepEqual(storedPersona.scope, { type: 'PERSONA', id: PERSONA });
    assert.equal(storedPersona.operator_did, opB.did);
    assert.deepEqual((storedPersona.ruleset as Json[])[0]!.conditions, [{ type: 'TagEquals', value: 'invoice' }]);

    // The persona rule beats the DID rule…
    const viaPersona = await dir.deliveryResolution(recipient.did, { persona: PERSONA, tag: 'invoice' });
    assert.equal(viaPersona.target, recipient.did);
    assert.equal(viaPersona.recipient_key_id, `${recipient.did}#ka`);
    assert.equal(viaPersona.policy?.source, 'persona');
    assert.equal(viaPersona.policy?.source_id, PERSONA);
    assert.equal(viaPersona.policy?.rule_id, 'persona-invoice');
    assert.equal(viaPersona.policy?.policy_id, storedPersona.policy_id);
    assert.equal(viaPersona.policy?.policy_ttl_seconds, 60);
    // …a tag it does not match falls back to the DID's policy…
    const otherTag = await dir.deliveryResolution(recipient.did, { persona: PERSONA, tag: 'receipt' });
    assert.equal(otherTag.policy?.source, 'did');
    assert.equal(otherTag.policy?.source_id, recipient.did);
    assert.equal(otherTag.policy?.rule_id, 'did-default');
    assert.equal(otherTag.policy?.policy_id, storedDid.policy_id);
    // …and so does a resolution without persona.
    assert.equal((await dir.deliveryResolution(recipient.did)).policy?.rule_id, 'did-default');
  });

  it('sets a v2 DID policy and DID constraints, then clears the policy', async () => {
    const policy: Json = {
      scope: { type: 'DID', id: v2Did.did },
      operator_did: v2Did.did,
      ruleset: [{ id: 'v2-rule', priority: 3, conditions: [], action: forward(svc.did, 'relay-b') }],
    };
    const set = await wait(policies.writeV2('set_did_policy_v2', v2Did.did, { policy, signer: v2Did.root }));
    assert.equal(set.operation, 'SetPolicy');
    let read = await policies.readV2({ type: 'did', id: v2Did.did });
    assert.equal(read.did, v2Did.did);
    const stored = read.policy as Json;
    assert.equal(stored.revision, 1);
    assert.equal(stored.policy_ttl_seconds, 60, 'v2 default ttl');
    assert.deepEqual(
      (stored.ruleset as Json[]).map((r) => r.id),
      ['v2-rule'],
    );
    assert.equal(read.delivery_constraints, null);

    await wait(policies.writeV2('set_did_constraints', v2Did.did, { constraints, signer: v2Did.root }));
    read = await policies.readV2({ type: 'did', id: v2Did.did });
    const dc = read.delivery_constraints as Json;
    for (const [k, v] of Object.entries(constraints)) assert.equal(dc[k], v, k);
    assert.equal(typeof dc.effective_ttl_seconds, 'number');
    assert.equal((read.policy as Json).revision, 1, 'the policy is kept');

    const res = await dir.deliveryResolution(v2Did.did);
    assert.equal(res.policy?.source, 'did');
    assert.equal(res.policy?.rule_id, 'v2-rule');
    assert.equal(res.policy?.rule_priority, 3);
    assert.equal(res.effective_constraints.max_replicas, 2, 'the stored constraints apply');
    assert.equal(res.effective_constraints.max_chunk_bytes, 100_000);

    await wait(policies.writeV2('clear_did_policy_v2', v2Did.did, { signer: v2Did.root }));
    read = await policies.readV2({ type: 'did', id: v2Did.did });
    assert.equal(read.policy, null);
    assert.equal((read.delivery_constraints as Json).max_replicas, 2, 'clearing the policy keeps the constraints');
    assert.equal((await dir.deliveryResolution(v2Did.did)).policy, null);
  });

  it('sets, reads and clears a v2 persona policy and persona constraints', async () => {
    const policy: Json = {
      scope: { type: 'PERSONA', id: 'acme' },
      operator_did: opA.did,
      ruleset: [{ id: 'acme-any', priority: 2, conditions: [], action: forward(svc.did, 'relay-a') }],
    };
    // policy_ttl_seconds is a v3 field: profile platform refuses it in a v2 policy, before anything is signed.
    await rejects(
      policies.writeV2('set_persona_policy_v2', 'acme', { policy: { ...policy, policy_ttl_seconds: 30 }, operatorDid: opA.did, signer: opA.root }),
      400,
      'invalid_delivery_policy',
    );
    await wait(policies.writeV2('set_persona_policy_v2', 'acme', { policy, operatorDid: opA.did, signer: opA.root }));
    let read = await policies.readV2({ type: 'persona', id: 'acme' });
    assert.equal(read.persona, 'acme');
    assert.equal(read.operator_did, opA.did);
    assert.equal((read.policy as Json).policy_ttl_seconds, 60, 'v2 policies hold 60 (policy_ttl_seconds is v3-only)');
    assert.deepEqual(
      ((read.policy as Json).ruleset as Json[]).map((r) => r.id),
      ['acme-any'],
    );
    const viaAcme = await dir.deliveryResolution(v2Did.did, { persona: 'acme' });
    assert.equal(viaAcme.policy?.source, 'persona');
    assert.equal(viaAcme.policy?.rule_id, 'acme-any');

    await wait(
      policies.writeV2('set_persona_constraints', 'acme', { constraints: { ...constraints, max_replicas: 1 }, operatorDid: opA.did, signer: opA.root }),
    );
    read = await policies.readV2({ type: 'persona', id: 'acme' });
    assert.equal((read.delivery_constraints as Json).max_replicas, 1);
    assert.equal((await dir.deliveryResolution(v2Did.did, { persona: 'acme' })).effective_constraints.max_replicas, 1, 'min(DID, persona) constraints');

    await wait(policies.writeV2('clear_persona_policy_v2', 'acme', { operatorDid: opA.did, signer: opA.root }));
    assert.equal((await policies.readV2({ type: 'persona', id: 'acme' })).policy, null);
    assert.equal((await dir.deliveryResolution(v2Did.did, { persona: 'acme' })).policy, null);
  });

  it('clears the v3 persona and DID policies', async () => {
    await wait(policies.writeV3({ type: 'persona', id: PERSONA }, { signer: opB.root, operatorDid: opB.did }));
    await rejects(policies.readV3({ type: 'persona', id: PERSONA }), 404, 'policy_not_found');
    assert.equal((await dir.deliveryResolution(recipient.did, { persona: PERSONA, tag: 'invoice' })).policy?.source, 'did');
    await wait(policies.writeV3({ type: 'did', id: recipient.did }, { signer: recipient.root }));
    await rejects(policies.readV3({ type: 'did', id: recipient.did }), 404, 'policy_not_found');
    assert.equal((await dir.deliveryResolution(recipient.did)).policy, null);
  });

  // ------------------------------------------------------------------ applications

  it('registers an application, sets its domain and status, links and unlinks a DID', async () => {
    await rejects(apps.read(APP), 404, 'application_not_found');
    const reg = await wait(apps.register(APP, { controlDid: opB.did, signer: opB.root }));
    assert.equal(reg.extrinsic, 'register_application');
    let app = await apps.read(APP);
    assert.equal(app.application_id, APP);
    assert.equal(app.control_did, opB.did);
    assert.equal(app.status, 'active');
    assert.equal(app.domain, null);
    assert.deepEqual(app.linked_dids, []);
    await rejects(apps.register(APP, { controlDid: opA.did, signer: opA.root }), 409, 'application_already_exists');

    // opA does not control the persona any more: it is opB's since the transfer.
    await rejects(apps.authorize(APP, { action: 'set_domain', domain: 'acme.example.net' }, opB.root), 403, 'domain_not_controlled');
    await wait(apps.authorize(APP, { action: 'set_domain', domain: PERSONA }, opB.root));
    app = await apps.read(APP);
    assert.equal(app.domain, PERSONA);
    assert.equal(app.domain_verified, true);

    await wait(apps.authorize(APP, { action: 'set_status', status: 'suspended' }, opB.root));
    assert.equal((await apps.read(APP)).status, 'suspended');
    await wait(apps.authorize(APP, { action: 'set_status', status: 'active' }, opB.root));
    assert.equal((await apps.read(APP)).status, 'active');

    await wait(apps.authorize(APP, { action: 'link_did', linkedDid: linked.did, linkedSigner: linked.root }, opB.root));
    assert.deepEqual((await apps.read(APP)).linked_dids, [linked.did]);
    await wait(apps.authorize(APP, { action: 'unlink_did', linkedDid: linked.did, linkedSigner: linked.root }, opB.root));
    assert.deepEqual((await apps.read(APP)).linked_dids, []);
    // The linked DID must sign too: a wrong linked key is refused.
    await rejects(apps.authorize(APP, { action: 'link_did', linkedDid: linked.did, linkedSigner: opA.root }, opB.root), 403, 'invalid_signature');
  });

  it('sets an application v3 policy (EventEquals CacheStored → Send) and reads it through GET /applications/{id}/policy', async () => {
    await rejects(apps.policy(APP), 404, 'policy_not_found');
    const rule: Json = {
      id: 'notify-stored',
      priority: 1,
      conditions: [{ type: 'EventEquals', value: 'CacheStored' }],
      action: {
        type: 'DeliveryPlan/v1',
        entry_step: 'notify',
        steps: [
          { id: 'notify', operation: 'Send', recipient_did: opB.did, payload_template: { recipient: { $from: '/event/recipient_did' }, kind: 'stored' } },
        ],
        transitions: [],
      },
    };
    const policy: Json = { scope: { type: 'APPLICATION', id: APP }, operator_did: opB.did, policy_ttl_seconds: 90, ruleset: [rule] };
    // Only the control DID owns the scope.
    await rejects(
      policies.writeV3({ type: 'application', id: APP }, { policy: { ...policy, operator_did: opA.did }, signer: opA.root, operatorDid: opA.did }),
      403,
      'invalid_policy_scope',
    );
    await wait(policies.writeV3({ type: 'application', id: APP }, { policy, signer: opB.root, operatorDid: opB.did }));
    const got = await apps.policy(APP);
    assert.equal(got.application_id, APP);
    assert.equal(got.control_did, opB.did);
    assert.equal(got.policy_revision, 1);
    assert.equal(got.policy_ttl_seconds, 90);
    const stored = got.policy as Json;
    assert.deepEqual(stored.scope, { type: 'APPLICATION', id: APP });
    const storedRule = (stored.ruleset as Json[])[0]!;
    assert.equal(storedRule.id, 'notify-stored');
    assert.deepEqual(storedRule.conditions, [{ type: 'EventEquals', value: 'CacheStored' }]);
    const step = ((storedRule.action as Json).steps as Json[])[0]!;
    assert.equal(step.operation, 'Send');
    assert.equal(step.recipient_did, opB.did);
    assert.deepEqual(step.payload_template, { recipient: { $from: '/event/recipient_did' }, kind: 'stored' });
    assert.equal((await apps.read(APP)).policy_revision, 1);
    assert.deepEqual((await policies.readV3({ type: 'application', id: APP })).policy, stored);

    // Suspending the application hides its policy.
    await wait(apps.authorize(APP, { action: 'set_status', status: 'suspended' }, opB.root));
    await rejects(apps.policy(APP), 404, 'application_not_found');
  });

  it('clears the domain and hands the application to another control DID (which drops its policy)', async () => {
    await wait(apps.authorize(APP, { action: 'set_status', status: 'active' }, opB.root));
    assert.equal((await apps.policy(APP)).policy_revision, 1);
    await wait(apps.authorize(APP, { action: 'clear_domain' }, opB.root));
    let app = await apps.read(APP);
    assert.equal(app.domain, null);
    assert.equal(app.domain_verified, false);
    await wait(apps.authorize(APP, { action: 'update_control', newControlDid: opA.did }, opB.root));
    app = await apps.read(APP);
    assert.equal(app.control_did, opA.did);
    assert.equal(app.policy_revision, null);
    await rejects(apps.policy(APP), 404, 'policy_not_found');
    // The former control DID's key no longer signs for it.
    await rejects(apps.authorize(APP, { action: 'set_status', status: 'suspended' }, opB.root), 403, 'invalid_signature');
    await wait(apps.authorize(APP, { action: 'set_status', status: 'tombstoned' }, opA.root));
    assert.equal((await apps.read(APP)).status, 'tombstoned');
    await rejects(apps.authorize(APP, { action: 'set_status', status: 'active' }, opA.root), 409, 'application_tombstoned');
  });
});
