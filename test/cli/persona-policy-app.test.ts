/**
 * Personas, delivery policies and applications through the `ddn` CLI alone: a `ddn serve` child (ports 0,
 * --allow-private-endpoints, persona TXT lookups sent to a loopback test DNS server) and `ddn` child processes.
 * A DNS persona is registered from the record `persona challenge` prints, renewed and shown; v3 DID and persona
 * policies are set and shown and resolve for the recipient; an application is registered, bound to the persona's
 * domain and suspended. Every write waits for finality and the finalized state is read back through the CLI.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { ddn, startServe, type DdnResult, type ServeNode } from './cli-process.js';

type Json = Record<string, unknown>;

const PERSONA = 'shop.example.com';
const APP = 'shop-app';

let dir: string;
let dns: TestDnsServer;
let node: ServeNode;
let env: NodeJS.ProcessEnv;
let op: string;
let recipient: string;

const path = (name: string) => join(dir, name);

async function ok(args: string[]): Promise<Json> {
  const r = await ddn(args, { env });
  assert.equal(r.code, 0, `ddn ${args.join(' ')}:\n${r.stderr}\n${JSON.stringify(r.json)}`);
  return r.json;
}

/** A failure (exit 1), or with `usage` a refused invocation (exit 2). */
async function fails(args: string[], usage = false): Promise<DdnResult> {
  const r = await ddn(args, { env });
  assert.equal(r.code, usage ? 2 : 1, `ddn ${args.join(' ')} should fail:\n${r.stderr}\n${JSON.stringify(r.json)}`);
  return r;
}

function writeJson(name: string, value: unknown): string {
  writeFileSync(path(name), JSON.stringify(value));
  return path(name);
}

const forwardTo = (did: string): Json => ({
  type: 'DeliveryPlan/v1',
  entry_step: 'fwd',
  steps: [{ id: 'fwd', operation: 'Forward', targets: [{ service_did: did, service_id: `${did}#relay` }] }],
  transitions: [],
});

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ddn-cli-persona-'));
  dns = await startDnsServer();
  node = await startServe(path('data'), ['--dns-server', dns.server, '--allow-private-endpoints', '--block-time-ms', '10']);
  env = { DDN_DIRECTORY_URL: node.directory };
  const keys = [
    ['op.pem', 'ed25519'],
    ['rcpt.pem', 'ed25519'],
    ['rcpt-x.pem', 'x25519'],
  ] as const;
  await Promise.all(keys.map(([file, type]) => ok(['key', 'generate', '--type', type, '--out', path(file)])));
  const created = await Promise.all([
    ok(['did', 'create', '--key', path('op.pem'), '--relay', node.relay]),
    ok(['did', 'create', '--key', path('rcpt.pem'), '--key-agreement', path('rcpt-x.pem')]),
  ]);
  op = created[0].did as string;
  recipient = created[1].did as string;
});

after(async () => {
  await node?.stop();
  await dns?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('ddn persona / policy / app end to end', () => {
  it('registers a DNS persona with the TXT record `persona challenge` prints, then renews it', async () => {
    const [show, ch] = await Promise.all([fails(['persona', 'show', PERSONA]), ok(['persona', 'challenge', PERSONA, '--operator', op])]);
    assert.equal(show.json.error, 'persona_not_found');
    assert.equal(ch.record_name, `_platform-persona.${PERSONA}`);
    assert.equal(ch.record_type, 'TXT');
    assert.match(ch.record_value as string, /^platform-persona-verification=/);
    assert.match(ch.challenge_id as string, /^[0-9a-f-]{36}$/);
    const register = [
      'persona',
      'register',
      PERSONA,
      '--challenge',
      ch.challenge_id as string,
      '--operator',
      op,
      '--key',
      path('op.pem'),
      '--verification-days',
      '10',
    ];
    // Not published yet: the Directory's DNS check fails and nothing is submitted.
    const early = await fails(register);
    assert.equal(early.json.error, 'dns_verification_failed');

    dns.setTxt(ch.record_name as string, ch.record_value as string);
    const reg = await ok(register);
    assert.equal(reg.status, 'finalized');
    assert.equal(reg.operation, 'Register');
    assert.equal(typeof reg.block_number, 'number');
    let rec = await ok(['persona', 'show', PERSONA]);
    assert.equal(rec.name, PERSONA);
    assert.equal('persona' in rec, false, 'the record has no top-level persona key');
    assert.equal(rec.kind, 'dns');
    assert.equal(rec.operator_did, op);
    assert.deepEqual(rec.controller_keys, ['root']);
    assert.equal(rec.deliverable, true);
    const firstExpiry = rec.verification_expires_at as number;
    assert.ok(Math.abs(firstExpiry - (rec.verified_at as number) - 10 * 86_400_000) < 60_000);

    const renewCh = await ok(['persona', 'challenge', PERSONA, '--operator', op, '--action', 'renew']);
    assert.equal(renewCh.action, 'renew_persona');
    dns.setTxt(renewCh.record_name as string, renewCh.record_value as string);
    const renewed = await ok([
      'persona',
      'renew',
      PERSONA,
      '--challenge',
      renewCh.challenge_id as string,
      '--operator',
      op,
      '--key',
      path('op.pem'),
      '--verification-days',
      '40',
    ]);
    assert.equal(renewed.operation, 'Renew');
    rec = await ok(['persona', 'show', PERSONA]);
    assert.ok((rec.verification_expires_at as number) > firstExpiry + 29 * 86_400_000, 'the renewal extended the proof');
    assert.equal((await ok(['persona', 'challenge-status', PERSONA, '--challenge', renewCh.challenge_id as string])).status, 'used');
  });

  it('sets and shows a v3 DID policy and a v3 persona policy; delivery resolution picks the persona rule for its tag', async () => {
    const didPolicy = writeJson('did-policy.json', {
      policy_ttl_seconds: 100,
      ruleset: [{ id: 'did-default', priority: 1, conditions: [], action: forwardTo(op) }],
    });
    // scope and operator_did come from --scope/--id (the recipient owns its DID scope).
    const set = await ok(['policy', 'set', '--scope', 'did', '--id', recipient, '--file', didPolicy, '--key', path('rcpt.pem')]);
    assert.equal(set.status, 'finalized');
    assert.equal(set.version, 3);
    const [shown, nonce] = await Promise.all([
      ok(['policy', 'show', '--scope', 'did', '--id', recipient]),
      ok(['policy', 'nonce', '--scope', 'did', '--id', recipient]),
    ]);
    const policy = shown.policy as Json;
    assert.deepEqual(policy.scope, { type: 'DID', id: recipient });
    assert.equal(policy.operator_did, recipient);
    assert.equal(policy.revision, 1);
    assert.equal(policy.policy_ttl_seconds, 100);
    assert.deepEqual(
      (policy.ruleset as Json[]).map((r) => r.id),
      ['did-default'],
    );
    assert.equal(nonce.nonce, '1');

    const personaPolicy = writeJson('persona-policy.json', {
      policy_ttl_seconds: 50,
      ruleset: [{ id: 'shop-orders', priority: 1, conditions: [{ type: 'TagEquals', value: 'order' }], action: forwardTo(op) }],
    });
    // A persona scope needs the operator: without --operator the CLI refuses before signing.
    const noOperator = await fails(['policy', 'set', '--scope', 'persona', '--id', PERSONA, '--file', personaPolicy, '--key', path('op.pem')], true);
    assert.equal(noOperator.json.error, 'invalid_usage');
    await ok(['policy', 'set', '--scope', 'persona', '--id', PERSONA, '--operator', op, '--file', personaPolicy, '--key', path('op.pem')]);
    const pShown = await ok(['policy', 'show', '--scope', 'persona', '--id', PERSONA]);
    assert.deepEqual((pShown.policy as Json).scope, { type: 'PERSONA', id: PERSONA });
    assert.equal((pShown.policy as Json).operator_did, op);

    const res = await fetch(`${node.directory}/delivery-resolution/${encodeURIComponent(recipient)}?persona=${PERSONA}&tag=order`);
    const body = (await res.json()) as { policy: Json };
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.policy.source, 'persona');
    assert.equal(body.policy.rule_id, 'shop-orders');
    const fallback = (await (await fetch(`${node.directory}/delivery-resolution/${encodeURIComponent(recipient)}?persona=${PERSONA}&tag=other`)).json()) as {
      policy: Json;
    };
    assert.equal(fallback.policy.rule_id, 'did-default');

    // Clearing the v3 policy.
    await ok(['policy', 'clear', '--scope', 'did', '--id', recipient, '--key', path('rcpt.pem')]);
    const gone = await fails(['policy', 'show', '--scope', 'did', '--id', recipient]);
    assert.equal(gone.json.error, 'policy_not_found');
  });

  it('registers an application, binds the persona domain, and changes its status', async () => {
    const reg = await ok(['app', 'register', APP, '--control-did', op, '--key', path('op.pem')]);
    assert.equal(reg.status, 'finalized');
    assert.equal(reg.extrinsic, 'register_application');
    let app = await ok(['app', 'show', APP]);
    assert.equal(app.control_did, op);
    assert.equal(app.status, 'active');
    assert.equal(app.domain, null);

    const notOurs = await fails(['app', 'set-domain', APP, '--domain', 'other.example.com', '--key', path('op.pem')]);
    assert.equal(notOurs.json.error, 'domain_not_controlled');
    await ok(['app', 'set-domain', APP, '--domain', PERSONA, '--key', path('op.pem')]);
    app = await ok(['app', 'show', APP]);
    assert.equal(app.domain, PERSONA);
    assert.equal(app.domain_verified, true);

    const bad = await fails(['app', 'set-status', APP, '--status', 'paused', '--key', path('op.pem')], true);
    assert.equal(bad.json.error, 'invalid_usage');
    const st = await ok(['app', 'set-status', APP, '--status', 'suspended', '--key', path('op.pem')]);
    assert.equal(st.action, 'set_status');
    assert.equal(st.status, 'finalized');
    assert.equal((await ok(['app', 'show', APP])).status, 'suspended');
  });
});
