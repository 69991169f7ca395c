/**
 * `CacheStored` events between separate nodes over real HTTP (http-api.md §10.9): an Application whose policy
 * has an `EventEquals CacheStored` rule with a Send step (to its control DID) forking a Call step (to its
 * ApplicationControl service under the verified domain). A stored envelope naming the application produces an
 * encrypted control envelope the control DID retrieves and decrypts, and a node-signed Call received by a local
 * HTTPS server (throwaway self-signed certificate, trusted only by this test's node). Control envelopes never
 * trigger events; a repeated store (dedupe) runs nothing again.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateX25519KeyPair } from '../../src/crypto/x25519.js';
import { decodeFileRecord } from '../../src/protocol/file-record.js';
import { bodySha256Hex, nodeRequestText, readNodeHeaders } from '../../src/protocol/node-signature.js';
import { loadNodeKey } from '../../src/app/node-keys.js';
import { parseBase64, utf8 } from '../../src/base/bytes.js';
import { aadFieldsOf, openPayload } from '../../src/protocol/payload-crypto.js';
import { verifyEd25519 } from '../../src/crypto/ed25519.js';
import { registerRecipientAt } from '../cache/harness.js';
import { fetchJson } from '../cache/http-support.js';
import { authorize, registerApplication } from '../support/application-flows.js';
import { didOf, keyOf, kid } from '../support/directory-flows.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { waitFor } from '../support/wait.js';
import { registerDnsPersona } from '../support/persona-flows.js';
import {
  directoryOf,
  envelope,
  profile,
  pullFrom,
  registerControlDid,
  relayPost,
  setPolicy,
  startDirectoryNode,
  startRelayNode,
  type Body,
} from './network-support.js';

const DOMAIN = 'apps.example.org';
const HOOK_HOST = `hooks.${DOMAIN}`;

interface Received {
  headers: Record<string, string>;
  body: string;
  url: string;
}

/** A self-signed certificate for HOOK_HOST made with the openssl CLI in a temp dir. */
function throwawayCertificate(): { key: string; cert: string } {
  const d = mkdtempSync(join(tmpdir(), 'ddn-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${HOOK_HOST}`,
        '-addext',
        `subjectAltName=DNS:${HOOK_HOST}`,
        '-keyout',
        join(d, 'key.pem'),
        '-out',
        join(d, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(d, 'key.pem'), 'utf8'), cert: readFileSync(join(d, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
}

describe('CacheStored events: Send and Call of an Application policy', () => {
  let dns: TestDnsServer;
  let dir: TestNode;
  let relay: TestNode;
  let cache: TestNode;
  let hook: https.Server;
  const received: Received[] = [];
  const cacheDir = mkdtempSync(join(tmpdir(), 'ddn-node-'));
  const controlSeed = 91;
  const controlDid = didOf(controlSeed, profile.p);
  const controlKey = keyOf(controlSeed);
  const ka = generateX25519KeyPair();
  let cacheUrl: string;

  before(async () => {
    const tlsPair = throwawayCertificate();
    hook = https.createServer({ key: tlsPair.key, cert: tlsPair.cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8'), url: req.url ?? '' });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    const hookUrl = `https://${HOOK_HOST}:${(hook.address() as AddressInfo).port}/hook`;

    dns = await startDnsServer();
    dir = await startDirectoryNode(['--dns-server', dns.server]);
    relay = await startRelayNode(dir);
    // a Cache whose event requests reach the hook's TLS server; its answers are contract-checked like every test node's
    cache = await startTestNode(
      ['--roles', 'cache', '--directory-url', dir.urls.directory!, '--allow-private-endpoints', '--event-relay-url', relay.urls.relay!],
      cacheDir,
      { eventOutbound: { extraCa: [tlsPair.cert], hosts: { [HOOK_HOST]: '127.0.0.1' } } },
    );
    cacheUrl = cache.urls.cache!;

    const h = directoryOf(dir);
    await registerControlDid(dir, controlSeed, ka.publicKey, cacheUrl, [
      { id: kid(controlDid, 'control'), type: 'PlatformApplicationControlService', serviceEndpoint: [hookUrl] },
    ]);
    const control = { did: controlDid, key: controlKey };
    await registerDnsPersona({ h, dns, close: async () => undefined }, DOMAIN, control);
    await registerApplication(h, 'acme.app', control);
    await authorize(h, 'acme.app', { action: 'set_domain', domain: DOMAIN }, controlKey);
    const template = {
      kind: 'stored',
      message: { $from: '/envelope/message_id' },
      recipient: { $from: '/event/recipient_did' },
      expires: { $from: '/event/expires_at' },
      rule: { $from: '/policy/rule_id' },
      node: { $from: '/node/role' },
      missing: { $from: '/envelope/nothing' },
    };
    await setPolicy(dir, control, 'application', 'acme.app', [
      {
        id: 'on-store',
        priority: 1,
        conditions: [{ type: 'EventEquals', value: 'CacheStored' }],
        action: {
          type: 'DeliveryPlan/v1',
          entry_step: 'notify',
          steps: [
            { id: 'notify', operation: 'Send', recipient_did: controlDid, payload_template: template },
            {
              id: 'hook',
              operation: 'Call',
              service_did: controlDid,
              service_id: kid(controlDid, 'control'),
              registered_domain: DOMAIN,
              payload_template: template,
            },
          ],
          transitions: [{ from: 'notify', to: 'hook', trigger: 'Always', mode: 'Fork' }],
        },
      },
    ]);
  });
  after(async () => {
    await cache?.stop();
    await relay?.stop();
    await dir?.stop();
    await dns?.close();
    hook?.close();
  });

  it('sends an encrypted control envelope to the control DID and calls the control service, once', async () => {
    const r = await registerRecipientAt(directoryOf(dir), 92, { cacheEndpoints: [cacheUrl] });
    const env = envelope(r.did, { application_id: 'acme.app' });
    const res = await relayPost(relay, env);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.equal(res.body.code, 'cached');

    const controlRecipient = { did: controlDid, key: controlKey, keyId: kid(controlDid, 'key-1'), serviceId: kid(controlDid, 'cache') };
    const item = await waitFor('the control envelope', async () =>
      (await pullFrom(cacheUrl, controlRecipient)).find((m) => (m.envelope as Body).tag === profile.controlTag),
    );
    const control = item.envelope as Body;
    assert.equal(control.to, controlDid);
    assert.equal(control.ttl, '24h');
    assert.equal(control.application_id, 'acme.app');
    const record = decodeFileRecord(profile, openPayload(profile, control.payload, aadFieldsOf(control), ka.privateKey));
    assert.equal(record.name, 'control.json');
    assert.equal(record.mediaType, 'application/json');
    const expected = { kind: 'stored', message: env.message_id, recipient: r.did, rule: 'on-store', node: 'cache', missing: null };
    const sent = JSON.parse(Buffer.from(record.data).toString('utf8')) as Body;
    assert.equal(typeof sent.expires, 'string');
    assert.deepEqual({ ...sent, expires: undefined }, { ...expected, expires: undefined });

    const call = await waitFor('the Call', async () => received[0]);
    assert.equal(call.url, '/hook');
    assert.deepEqual(JSON.parse(call.body), sent, 'the same rendered template');
    const headers = readNodeHeaders((n) => call.headers[n.toLowerCase()]);
    assert.ok(headers, 'node-signed');
    assert.equal(headers.nodeDid, cache.identity.did);
    const text = nodeRequestText(profile, {
      method: 'POST',
      url: `https://${HOOK_HOST}:${(hook.address() as AddressInfo).port}/hook`,
      nodeDid: headers.nodeDid,
      serviceId: headers.serviceId,
      keyId: headers.keyId,
      timestamp: headers.timestamp,
      nonce: headers.nonce,
      bodySha256Hex: bodySha256Hex(call.body),
    });
    const nodeKey = loadNodeKey(cacheDir).publicKey;
    assert.equal(headers.keyId, `${cache.identity.did}#node`);
    assert.ok(verifyEd25519(nodeKey, utf8(text), parseBase64(headers.signature)!), 'the §10.6 signature verifies with the node key');
    // A Cache-only node acts under its own, published Cache service, which authorizes the node key (§10.6, §10.9).
    assert.equal(headers.serviceId, `${cache.identity.did}#cache`);
    await cache.identity.ready;
    const nodeRecord = await fetchJson(`${dir.urls.directory!}/resolve/${encodeURIComponent(cache.identity.did)}`);
    const services = (nodeRecord.body.document as { service: { id: string; type: string; serviceEndpoint: string[]; authorization: string[] }[] }).service;
    assert.deepEqual(services, [{ id: headers.serviceId, type: 'PlatformCacheService', serviceEndpoint: [cacheUrl], authorization: [headers.keyId] }]);

    // the identical store again is deduplicated: no second event; the control envelope itself triggered nothing
    await cache.events!.idle();
    const again = await fetchJson(`${cacheUrl}/cache/store`, { body: env });
    assert.equal(again.status, 202, JSON.stringify(again.body));
    assert.equal(again.body.deduped, true);
    await cache.events!.idle();
    assert.equal(received.length, 1, 'one Call for one CacheStored event');
    const controls = (await pullFrom(cacheUrl, controlRecipient)).filter((m) => (m.envelope as Body).tag === profile.controlTag);
    assert.equal(controls.length, 1, 'one Send, and none for the control envelope');
  });
});
