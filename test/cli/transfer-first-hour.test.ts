/**
 * The first hour of `ddn send` / `ddn receive` (issue 25 items 2–6), through `ddn` child processes and a `ddn serve`
 * node: aliases and `…@persona` wherever a DID goes, signed senders reported by the receiver, a 48 MiB receive
 * that streams (peak RSS of the receiving process measured from /proc), a send interrupted with SIGINT and resumed
 * by running it again, and a Relay that refuses connections reported at once.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ddn, spawnDdn, startServe, type ServeNode } from './cli-process.js';
import { bundleDdn } from './ddn-bundle.js';

const MiB = 1_048_576;
let dir: string;
let node: ServeNode;
let env: NodeJS.ProcessEnv;
let alice: string;
let bob: string;

const path = (name: string) => join(dir, name);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const receiveArgs = (out: string, as = 'bob') => ['receive', '--did', as, '--key', path('bob.pem'), '--decryption-key', path('bob-x.pem'), '--output-dir', out];

interface Received {
  name: string;
  path: string;
  size_bytes: number;
  sha256: string;
  sender: { did: string; key_id: string } | null;
}

/** Peak resident set (VmHWM, bytes) of a running process, or undefined once it is gone. */
function vmHwm(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m === null ? undefined : Number(m[1]) * 1024;
  } catch {
    return undefined;
  }
}

/** A TCP port on loopback with nothing listening. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ddn-cli-first-hour-'));
  node = await startServe(path('data'), ['--allow-private-endpoints', '--block-time-ms', '20']);
  env = { DDN_DIRECTORY_URL: node.directory, DDN_RELAY_URL: node.relay, XDG_STATE_HOME: path('state') };
  for (const [file, type] of [
    ['alice.pem', 'ed25519'],
    ['bob.pem', 'ed25519'],
    ['bob-x.pem', 'x25519'],
  ] as const) {
    const r = await ddn(['key', 'generate', '--type', type, '--out', path(file)], { env });
    assert.equal(r.code, 0, r.stderr);
  }
  const create = async (args: string[]) => {
    const r = await ddn(['did', 'create', ...args], { env });
    assert.equal(r.code, 0, r.stderr);
    return r.json.did as string;
  };
  alice = await create(['--key', path('alice.pem'), '--alias', 'alice']);
  bob = await create(['--key', path('bob.pem'), '--key-agreement', path('bob-x.pem'), '--relay', node.relay, '--cache', node.cache, '--alias', 'bob']);
});

after(async () => {
  await node?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('aliases and personas wherever a DID goes', () => {
  it('did resolve takes an alias; a persona suffix is refused there with a clear usage error', async () => {
    const r = await ddn(['did', 'resolve', 'Bob'], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.did, bob);
    const unknown = await ddn(['did', 'resolve', 'nobody-has-this'], { env });
    assert.equal(unknown.json.code, 'alias_not_found');
    assert.match(unknown.stderr, /no DID has the alias 'nobody-has-this'/);
    const persona = await ddn(['did', 'resolve', 'bob@example.com'], { env });
    assert.equal(persona.json.code, 'invalid_usage');
    assert.match(persona.stderr, /'@persona' only addresses a message/);
  });

  it('send --to ALIAS and receive --did ALIAS deliver an anonymous message, reported as anonymous', async () => {
    const sent = await ddn(['send', '--to', 'bob', '--input', '-', '--name', 'hello.txt'], { env, stdin: Buffer.from('hello bob') });
    assert.equal(sent.code, 0, sent.stderr);
    assert.equal(sent.json.to, bob);
    assert.equal(sent.json.alias, 'bob');
    assert.equal(sent.json.sender, null);
    const out = path('out-alias');
    mkdirSync(out);
    const got = await ddn(receiveArgs(out), { env });
    assert.equal(got.code, 0, got.stderr);
    const files = got.json.files as Received[];
    assert.deepEqual(
      files.map((f) => [f.name, f.sender]),
      [['hello.txt', null]],
    );
    assert.match(got.stderr, /from an anonymous sender/);
    assert.equal(readFileSync(join(out, 'hello.txt'), 'utf8'), 'hello bob');
  });

  it('send --to ALIAS@PERSONA asks the Directory for that persona (one that does not exist is not deliverable)', async () => {
    const sent = await ddn(['send', '--to', 'bob@unknown-persona.example', '--input', '-'], { env, stdin: Buffer.from('x') });
    assert.equal(sent.code, 1);
    assert.equal(sent.json.code, 'persona_not_deliverable');
    const bad = await ddn(['send', '--to', 'bob@not a persona', '--input', '-'], { env, stdin: Buffer.from('x') });
    assert.equal(bad.json.code, 'invalid_usage');
  });
});

describe('signed senders', () => {
  it('send --from --key signs the envelope; receive reports the verified sender', async () => {
    const data = randomBytes(3 * MiB + 5);
    writeFileSync(path('signed.bin'), data);
    const sent = await ddn(['send', '--to', bob, '--from', 'alice', '--key', path('alice.pem'), '--input', path('signed.bin')], { env });
    assert.equal(sent.code, 0, sent.stderr);
    assert.equal(sent.json.sender, alice);
    const out = path('out-signed');
    mkdirSync(out);
    const got = await ddn(receiveArgs(out, bob), { env });
    assert.equal(got.code, 0, got.stderr);
    const files = got.json.files as Received[];
    assert.deepEqual(
      files.map((f) => f.sender),
      [{ did: alice, key_id: 'root' }],
    );
    assert.match(got.stderr, new RegExp(`from ${alice} \\(signature verified\\)`));
    assert.equal(sha(readFileSync(join(out, 'signed.bin'))), sha(data));
  });

  it('refuses a key that is not the sender’s, and --from without --key', async () => {
    const wrong = await ddn(['send', '--to', bob, '--from', alice, '--key', path('bob.pem'), '--input', '-'], { env, stdin: Buffer.from('x') });
    assert.equal(wrong.json.code, 'invalid_usage');
    assert.match(wrong.stderr, /--key is not the key 'root' of/);
    // no --key and no identity book that holds the sender (with one, its key signs: the README's quick start)
    const noBook = { ...env, XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), 'ddn-nobook-')) };
    const missing = await ddn(['send', '--to', bob, '--from', alice, '--input', '-'], { env: noBook, stdin: Buffer.from('x') });
    assert.equal(missing.json.code, 'invalid_usage');
  });
});

describe('streaming receive', () => {
  it('receives 48 MiB (48 signed chunks) byte-identical with the receiving process under 150 MiB peak RSS', async () => {
    const data = randomBytes(48 * MiB);
    writeFileSync(path('big48.bin'), data);
    const sent = await ddn(['send', '--to', bob, '--from', alice, '--key', path('alice.pem'), '--input', path('big48.bin')], { env });
    assert.equal(sent.code, 0, sent.stderr);
    assert.equal(sent.json.total_chunks, 48);
    const out = path('out-48');
    mkdirSync(out);
    const built = await bundleDdn();
    after(built.remove);
    const child = spawnDdn(receiveArgs(out, bob), { env, entry: built.entry });
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, vmHwm(child.proc.pid!) ?? 0);
    }, 25);
    const code = await child.exit;
    clearInterval(sampler);
    assert.equal(code, 0, child.stderr());
    const result = JSON.parse(child.stdout()) as { files: Received[] };
    assert.deepEqual(
      result.files.map((f) => [f.name, f.size_bytes, f.sender?.did]),
      [['big48.bin', 48 * MiB, alice]],
    );
    assert.equal(sha(readFileSync(join(out, 'big48.bin'))), sha(data));
    assert.ok(peak > 0, 'the peak RSS was sampled');
    process.stderr.write(`# peak RSS of the receiving ddn process for 48 MiB: ${(peak / MiB).toFixed(1)} MiB\n`);
    assert.ok(peak < 150 * MiB, `peak RSS ${(peak / MiB).toFixed(1)} MiB`);
    assert.deepEqual(readdirSync(out), ['big48.bin'], 'no partial file left behind');
  });
});

describe('resumable send', () => {
  it('an interrupted send says how far it got; running it again continues the same set', async () => {
    const data = randomBytes(24 * MiB);
    writeFileSync(path('resume.bin'), data);
    const args = ['send', '--to', 'bob', '--input', path('resume.bin'), '--chunk-size', '131072'];
    const first = spawnDdn(args, { env });
    const stateDir = join(path('state'), 'ddn', 'sends');
    // interrupt once the Relay confirmed a few envelopes (the state file records each one)
    await new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        const files = existsSync(stateDir) ? readdirSync(stateDir).filter((f) => f.endsWith('.json')) : [];
        const state = files.length === 1 ? (JSON.parse(readFileSync(join(stateDir, files[0]!), 'utf8')) as { confirmed: number }) : undefined;
        if (state !== undefined && state.confirmed >= 3) {
          clearInterval(timer);
          first.proc.kill('SIGINT');
          resolve();
        }
      }, 10);
      void first.exit.then(() => {
        clearInterval(timer);
        reject(new Error(`the send ended before it was interrupted:\n${first.stderr()}`));
      });
    });
    const code = await first.exit;
    assert.equal(code, 130, 'Ctrl-C exits 130 (docs/cli.md)');
    const stopped = JSON.parse(first.stdout()) as { code: string; details: { confirmed_envelopes: number; total_envelopes: number } };
    assert.equal(stopped.code, 'interrupted');
    assert.ok(stopped.details.confirmed_envelopes >= 3 && stopped.details.confirmed_envelopes < 192, JSON.stringify(stopped));
    assert.equal(stopped.details.total_envelopes, 192);
    assert.match(first.stderr(), /ddn send: interrupted by SIGINT: \d+ of 192 envelopes .* are staged at the Relay; run the same command again to resume/);
    assert.equal(first.stderr().match(/interrupted/g)?.length, 1, `the interruption is told once:\n${first.stderr()}`);

    const again = await ddn(args, { env });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /resuming: the Relay confirmed \d+ envelope/);
    assert.ok((again.json.resumed_envelopes as number) >= stopped.details.confirmed_envelopes);
    assert.equal(again.json.code, 'chunk_set_delivered');
    assert.deepEqual(
      readdirSync(stateDir).filter((f) => f.endsWith('.json')),
      [],
      'a finished send leaves no state',
    );

    const out = path('out-resume');
    mkdirSync(out);
    const got = await ddn(receiveArgs(out), { env });
    assert.equal(got.code, 0, got.stderr);
    assert.equal((got.json.files as Received[]).length, 1, 'one set, not a second copy');
    assert.equal(sha(readFileSync(join(out, 'resume.bin'))), sha(data));
  });
});

describe('fail fast and say why', () => {
  it('a Relay that refuses connections is reported at once, without retries', async () => {
    const port = await closedPort();
    const r = await ddn(['send', '--to', bob, '--relay', `http://127.0.0.1:${port}`, '--input', '-'], { env, stdin: Buffer.from('x') });
    assert.equal(r.code, 1);
    assert.equal(r.json.code, 'relay_unreachable');
    assert.match(r.json.message as string, /cannot reach the Relay at http:\/\/127\.0\.0\.1:\d+\/relay: .*ECONNREFUSED/);
    assert.doesNotMatch(r.stderr, /retrying/);
  });
});
