/**
 * The contract check of test nodes (test/support/contract-check.ts) sees node-to-node requests too: an answer a
 * node's own client (`OutboundHttp`, the Relay's stores, the remote Directory lookups) reads from a checked server,
 * and a request body that server accepted, are validated against its document — a violation fails `stopChecking`.
 * A stand-in server (real HTTP, test/support/stand-in-contract.ts) serves a small document and answers against it or not.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OutboundHttp } from '../../src/outbound/outbound-http.js';
import { checkContract, stopChecking } from '../support/contract-check.js';
import { standIn } from '../support/stand-in-contract.js';

describe('the contract check of node-to-node requests', () => {
  let server: Server;
  let url: string;
  const http = new OutboundHttp({ allowPrivate: true });

  before(async () => {
    server = standIn();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    http.close();
    server.close();
  });

  it('passes answers and accepted bodies that match the target document', async () => {
    await checkContract([url]);
    assert.equal((await http.request({ method: 'GET', url: `${url}/things/good`, headers: {}, timeoutMs: 5000 })).status, 200);
    const body = Buffer.from(JSON.stringify({ name: 'n' }));
    assert.equal(
      (await http.request({ method: 'POST', url: `${url}/things`, headers: { 'content-type': 'application/json' }, body, timeoutMs: 5000 })).status,
      202,
    );
    assert.doesNotThrow(() => stopChecking([url]));
  });

  it('fails on an answer its document does not describe, an unlisted code, and an accepted body outside the request schema', async () => {
    await checkContract([url]);
    await http.request({ method: 'GET', url: `${url}/things/bad`, headers: {}, timeoutMs: 5000 });
    await http.request({ method: 'GET', url: `${url}/things/odd`, headers: {}, timeoutMs: 5000 });
    const extra = Buffer.from(JSON.stringify({ name: 'n', extra: 1 }));
    await http.request({ method: 'POST', url: `${url}/things`, headers: { 'content-type': 'application/json' }, body: extra, timeoutMs: 5000 });
    assert.throws(
      () => stopChecking([url]),
      (e: Error) =>
        /GET \/things\/bad 200: .*must have required property 'id'/.test(e.message) &&
        /GET \/things\/odd 404: .*must be equal to one of the allowed values/.test(e.message) &&
        /node-to-node POST \/things request: .*must NOT have additional properties/.test(e.message),
    );
    // once stopped, the client is no longer wrapped
    assert.equal(OutboundHttp.prototype.request.name, 'request');
  });
});
