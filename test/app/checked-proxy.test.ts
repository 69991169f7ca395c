/**
 * The contract-checking proxy in front of child processes (test/support/checked-proxy.ts): it passes requests and
 * answers through as they are, records what the child role's document does not describe — a wrong answer, an
 * unlisted code, an accepted body outside the request schema — and closes when the child is SIGKILLed, keeping
 * what it saw before. The child is a stand-in (test/support/stand-in-contract.ts) that answers against its small
 * document or not.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { checkedProxy, checkedUrls, takeAllViolations, type CheckedProxy } from '../support/checked-proxy.js';
import { standIn } from '../support/stand-in-contract.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const post = (url: string, body: unknown): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('the contract-checking proxy', () => {
  let server: Server;
  let proxy: CheckedProxy;

  before(async () => {
    server = standIn();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = await checkedProxy(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });
  after(() => {
    proxy.close();
    server.close();
  });

  it('passes answers, headers and accepted bodies that match the document through unchanged, with no violation', async () => {
    const res = await fetch(`${proxy.url}/things/good`, { headers: { 'x-ddn-test': 'proof-1' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-ddn-echo'), 'proof-1');
    assert.deepEqual(await res.json(), { id: 'good' });
    const accepted = await post(`${proxy.url}/things`, { name: 'n' });
    assert.equal(accepted.status, 202);
    assert.deepEqual(await accepted.json(), { ok: true });
    assert.deepEqual(proxy.takeViolations(), []);
  });

  it("keeps its connections to the test its own: no keep-alive bound of the child's passed on, none of its own announced", async () => {
    // the stand-in announces Node's `Keep-Alive: timeout=5`; a client that believed it of the proxy would reuse a
    // connection the proxy may be closing
    const direct = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/things/good`);
    assert.match(direct.headers.get('keep-alive') ?? '', /timeout=/);
    await direct.text();
    const res = await fetch(`${proxy.url}/things/good`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('keep-alive'), null, 'the client bounds how long the connection stays idle');
    assert.notEqual(res.headers.get('connection'), 'close');
    assert.deepEqual(await res.json(), { id: 'good' });
    assert.deepEqual(proxy.takeViolations(), []);
  });

  it('records an answer its document does not describe, an unlisted code, and an accepted body outside the request schema', async () => {
    assert.deepEqual(await (await fetch(`${proxy.url}/things/bad`)).json(), { name: 'no id' }, 'the wrong answer reaches the test as sent');
    await (await fetch(`${proxy.url}/things/odd`)).text();
    await (await post(`${proxy.url}/things`, { name: 'n', extra: 1 })).text();
    const seen = proxy.takeViolations().join('\n');
    assert.match(seen, /GET \/things\/bad 200: .*must have required property 'id'/);
    assert.match(seen, /GET \/things\/odd 404: .*must be equal to one of the allowed values/);
    assert.match(seen, /POST \/things request: .*must NOT have additional properties/);
    assert.deepEqual(proxy.takeViolations(), [], 'taken once');
  });
});

/** Resolves once a TCP connection to `url`'s port is made (and drops it); rejects when it is refused. */
const connected = (url: string): Promise<void> =>
  new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(url).port), '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.on('error', reject);
  });

describe('the proxies of a child process', () => {
  it('close when the child is SIGKILLed, keeping the violations seen before', async () => {
    const code = `const { standIn } = await import('./test/support/stand-in-contract.ts');
      const s = standIn();
      s.listen(0, '127.0.0.1', () => console.log(s.address().port));`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const port = await new Promise<string>((resolve) => child.stdout.setEncoding('utf8').once('data', (s: string) => resolve(s.trim())));
      const { role } = await checkedUrls({ role: `http://127.0.0.1:${port}` }, child);
      assert.equal((await fetch(`${role!}/things/good`)).status, 200);
      await (await fetch(`${role!}/things/bad`)).text();
      child.kill('SIGKILL');
      await exited;
      await assert.rejects(connected(role!), /ECONNREFUSED/, 'the proxy no longer listens');
      assert.match(takeAllViolations().join('\n'), /GET \/things\/bad 200: .*must have required property 'id'/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
