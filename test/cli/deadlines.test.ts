/**
 * No silent stalls (issue 42 item 1), through `ddn` child processes: a Directory or Relay stand-in that accepts
 * TCP and never answers ends the command with `request_timeout` (exit 3) naming the URL, after a "waiting for …"
 * line; a bad port and a 4xx are reported at once, without retries.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ddn, spawnDdn, startServe, type ServeNode } from './cli-process.js';

let dir: string;
let node: ServeNode;
let env: NodeJS.ProcessEnv;
let bob: string;
let hung: Server;
let hungUrl: string;
let refusing: HttpServer;
let refusingUrl: string;
const sockets = new Set<Socket>();

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ddn-cli-deadlines-'));
  // accepts every connection and never answers
  hung = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
  hungUrl = `http://127.0.0.1:${(hung.address() as { port: number }).port}`;
  // answers 403 to everything
  refusing = createHttpServer((_req, res) => res.writeHead(403, { 'content-type': 'application/json' }).end('{"code":"forbidden","message":"no"}'));
  await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
  refusingUrl = `http://127.0.0.1:${(refusing.address() as { port: number }).port}`;
  node = await startServe(join(dir, 'data'), ['--allow-private-endpoints', '--block-time-ms', '20']);
  env = { DDN_DIRECTORY_URL: node.directory, XDG_STATE_HOME: join(dir, 'state'), XDG_CONFIG_HOME: join(dir, 'config') };
  const created = await ddn(['did', 'create', '--relay', node.relay, '--cache', node.cache], { env });
  assert.equal(created.code, 0, created.stderr);
  bob = created.json.did as string;
});

after(async () => {
  for (const s of sockets) s.destroy();
  hung?.close();
  refusing?.close();
  await node?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a node that accepts the connection and never answers', () => {
  it('a hung Directory: a waiting line naming the URL, then request_timeout (exit 3) naming it', async () => {
    const r = await ddn(['did', 'resolve', bob, '--directory', hungUrl, '--answer-timeout', '1'], { env });
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.json.code, 'request_timeout');
    assert.equal(r.json.message, `no answer from the Directory at ${hungUrl}/health within 1 s`);
    assert.match(r.stderr, new RegExp(`waiting for the Directory at ${hungUrl}/health \\(\\d+ s; gives up after \\d+ s\\)`));
  });

  it('a hung Relay: waiting lines, a few attempts within --retry-for, then request_timeout (exit 3)', async () => {
    const r = await ddn(['send', '--to', bob, '--relay', hungUrl, '--answer-timeout', '1', '--retry-for', '1', '--input', '-'], {
      env,
      stdin: Buffer.from('hello'),
    });
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.json.code, 'request_timeout');
    assert.match(r.json.message as string, new RegExp(`^no answer from the Relay at ${hungUrl}/relay within 1 s \\(gave up after \\d attempts?\\)`));
    assert.match(r.stderr, new RegExp(`waiting for the Relay at ${hungUrl}/relay`));
  });

  it('send --help states the deadlines and the worst case', async () => {
    const child = spawnDdn(['send', '--help'], { env });
    assert.equal(await child.exit, 0);
    const help = child.stdout().replace(/\s+/g, ' ');
    assert.match(help, /--connect-timeout SECONDS .*default 10/);
    assert.match(help, /--answer-timeout SECONDS .*default 30/);
    assert.match(help, /Worst case for a Relay that never answers: --retry-for plus one attempt \(10 s \+ 30 s\), about 160 s/);
  });
});

describe('permanent failures are not retried', () => {
  it('a bad port fails at once with the URL and no retry', async () => {
    const r = await ddn(['send', '--to', bob, '--relay', 'http://127.0.0.1:6000', '--input', '-'], { env, stdin: Buffer.from('x') });
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.json.code, 'relay_unreachable');
    assert.equal(r.json.message, 'cannot reach the Relay at http://127.0.0.1:6000/relay: fetch refuses this port (bad port)');
    assert.doesNotMatch(r.stderr, /retrying/);
  });

  it('a 4xx other than 408 and 429 fails at once', async () => {
    const r = await ddn(['send', '--to', bob, '--relay', refusingUrl, '--input', '-'], { env, stdin: Buffer.from('x') });
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.json.code, 'forbidden');
    assert.doesNotMatch(r.stderr, /retrying/);
  });

  it('a bad --answer-timeout is a usage error', async () => {
    const r = await ddn(['did', 'resolve', bob, '--answer-timeout', '0'], { env });
    assert.equal(r.code, 2);
    assert.equal(r.json.message, '--answer-timeout must be a positive number of seconds');
  });
});
