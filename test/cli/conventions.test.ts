/**
 * Conventions of the user commands, run in-process through `main()`: `--help` on stdout for every command, one JSON
 * result on stdout, human text on stderr, exit codes 0 (success), 1 (failure), 2 (usage) and 3 (timeout); key files.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/app/config.js';
import { startNode, type RunningNode } from '../../src/app/node.js';
import { checkedNode } from '../support/contract-check.js';
import type { CliIo } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import { progressBar } from '../../src/cli/progress.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  json: Record<string, unknown>;
}

function fakeIo(env: NodeJS.ProcessEnv = {}, tty = false): CliIo & { out: string; err: string } {
  const io = {
    out: '',
    err: '',
    env,
    stderrIsTTY: tty,
    stdout: (t: string) => void (io.out += t),
    stderr: (t: string) => void (io.err += t),
    shutdownSignal: () => new Promise<NodeJS.Signals>(() => {}),
  };
  return io;
}

async function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const io = fakeIo({ XDG_CONFIG_HOME: join(dir, 'config'), ...env });
  const code = await main(args, io);
  const lines = io.out.split('\n').filter((l) => l !== '');
  return { code, stdout: io.out, stderr: io.err, json: lines.length === 1 ? (JSON.parse(lines[0]!) as Record<string, unknown>) : {} };
}

const dir = mkdtempSync(join(tmpdir(), 'ddn-cli-conv-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('--help everywhere', () => {
  it('every command and subcommand prints its usage on stdout (so `| less` works), nothing on stderr, and exits 0', async () => {
    const visited: string[] = [];
    const walk = async (path: string[]): Promise<void> => {
      const r = await run([...path, '--help']);
      assert.equal(r.code, 0, `${path.join(' ')} --help`);
      assert.equal(r.stderr, '', `${path.join(' ')} --help prints nothing on stderr`);
      assert.match(r.stdout, /^usage: /, `${path.join(' ')} --help`);
      if (path.length === 0 || !/\ncommands:\n/.test(r.stdout)) assert.match(r.stdout, /Exit status: 0 /, `${path.join(' ')} --help shows the exit statuses`);
      visited.push(path.join(' '));
      const m = /\ncommands:\n([\s\S]*?)\n\n/.exec(r.stdout);
      if (m === null) return;
      for (const line of m[1]!.split('\n')) await walk([...path, line.trim().split(/\s+/)[0]!]);
    };
    await walk([]);
    for (const cmd of [
      'serve',
      'migrate',
      'key generate',
      'did create',
      'did list',
      'did resolve',
      'did alias add',
      'did root-key rotate',
      'did deactivate',
      'send',
      'receive',
      'persona register',
      'persona transfer-complete',
      'policy set',
      'policy constraints',
      'app register',
      'app link-did',
    ]) {
      assert.ok(visited.includes(cmd), `${cmd} is reachable and has --help`);
    }
  });
});

describe('--help says what the command does', () => {
  /** The --help text of every command and subcommand, by path. */
  async function helps(): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const walk = async (path: string[]): Promise<void> => {
      const text = (await run([...path, '--help'])).stdout;
      out.set(path.join(' '), text);
      const m = /\ncommands:\n([\s\S]*?)\n\n/.exec(text);
      if (m !== null) for (const line of m[1]!.split('\n')) await walk([...path, line.trim().split(/\s+/)[0]!]);
    };
    await walk([]);
    return out;
  }

  it('no option is called required and given a default at once; every document named exists in the repository', async () => {
    const root = new URL('../..', import.meta.url);
    for (const [path, text] of await helps()) {
      const joined = text.replace(/\n\s+/g, ' ');
      for (const line of joined.split('\n').filter((l) => /^\s+--/.test(l))) {
        assert.ok(!(/\brequired\b/.test(line) && /default/.test(line)), `ddn ${path} --help: '${line.trim()}' is both required and defaulted`);
      }
      for (const doc of joined.match(/[\w./-]+\.md\b/g) ?? []) {
        const file = doc.includes('/') ? doc : `docs/${doc}`;
        assert.ok(existsSync(new URL(file, root)), `ddn ${path} --help names ${doc}, which is not in the repository`);
      }
      assert.doesNotMatch(joined, /http-api\.md|service-spec\.md|ledger-rules\.md/, `ddn ${path} --help points at the product spec, which users do not have`);
      if (/--connect-timeout/.test(text)) {
        assert.match(
          text.replace(/\s+/g, ' '),
          /A node that does not answer: .* a hung Directory ends the command within 40 s \(exit 3\)/,
          `ddn ${path} --help states its worst case`,
        );
      }
    }
  });

  it('migrate lists only its options; serve says --db holds the ledger too; send states its worst case', async () => {
    const h = await helps();
    const migrate = h.get('migrate')!;
    assert.match(migrate, /--db URL/);
    assert.doesNotMatch(migrate, /--relay-port|--cache-port|--block-time-ms/);
    assert.match(h.get('serve')!.replace(/\s+/g, ' '), /--db URL postgres:\/\/… database for the ledger, DNS challenges, the Cache mailbox/);
    assert.match(h.get('send')!.replace(/\s+/g, ' '), /Worst case for a Relay that never answers/);
    const receive = h.get('receive')!.replace(/\n\s{30,}/g, ' ');
    assert.match(receive, /--did DID\s+the recipient DID \(default: the identity book's only identity; an alias of the book works too\)\n/);
    assert.match(h.get('policy set')!, /docs\/policies\.md/);
    assert.match(
      h.get('persona register-named')!.replace(/\s+/g, ' '),
      /--key FILE Ed25519 private key file of the signer \(default: the root key of the --operator/,
    );
  });
});

describe('usage errors', () => {
  for (const [args, pattern] of [
    [['did', 'resolve'], /a DID is required/],
    [['did', 'frobnicate'], /unknown command 'ddn did frobnicate'/],
    [['did'], /a command is required/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['send', '--to', 'bob', '--input', 'f', '--ttl', 'forever'], /--ttl 'forever' is not a duration from 1 s to 10 years/],
    [['send', '--to', 'did:platform:8DfbjXLth7APvt3qQPgtf'], /--input is required/],
    [['key', 'generate', '--out', join(dir, 'x.pem'), '--frob'], /--frob/],
    [['key', 'generate', '--out', join(dir, 'y.pem'), '--type', 'rsa'], /--type must be ed25519 or x25519/],
    [['send', '--to', 'not a did!', '--input', 'f'], /--to must be a DID or an alias/],
    [['send', '--to', 'bob@', '--input', 'f'], /--to: '' is not a valid persona name/],
    [['send', '--to', 'bob', '--from', 'alice', '--input', 'f'], /--from needs --key/],
    [['receive', '--did', 'bob@example.com', '--key', 'k'], /'@persona' only addresses a message/],
  ] as const) {
    it(`ddn ${args.join(' ')} → exit 2, invalid_usage`, async () => {
      const r = await run([...args]);
      assert.equal(r.code, 2);
      assert.equal(r.json.code, 'invalid_usage');
      assert.equal(r.json.error, 'invalid_usage');
      assert.match(String(r.json.message), pattern);
      assert.match(r.stderr, pattern);
    });
  }
});

describe('ddn key', () => {
  it('generates PKCS#8 PEM files with mode 0600 and never overwrites one', async () => {
    const file = join(dir, 'k.pem');
    const r = await run(['key', 'generate', '--out', file]);
    assert.equal(r.code, 0);
    assert.equal(r.json.type, 'ed25519');
    assert.match(String(r.json.public_key_multibase), /^z6Mk/);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const pem = readFileSync(file, 'utf8');
    assert.match(pem, /^-----BEGIN PRIVATE KEY-----/);
    const again = await run(['key', 'generate', '--out', file, '--type', 'x25519']);
    assert.equal(again.code, 1);
    assert.equal(again.json.code, 'key_file_exists');
    assert.equal(readFileSync(file, 'utf8'), pem, 'unchanged');
    const shown = await run(['key', 'public', '--key', file]);
    assert.equal(shown.json.public_key_multibase, r.json.public_key_multibase);
  });

  it('X25519 keys show as z6LS… key-agreement multibase', async () => {
    const r = await run(['key', 'generate', '--type', 'x25519', '--out', join(dir, 'x25519.pem')]);
    assert.equal(r.code, 0);
    assert.match(String(r.json.public_key_multibase), /^z6LS/);
    const wrong = await run(['did', 'create', '--key', join(dir, 'x25519.pem'), '--directory', 'http://127.0.0.1:9', '--profile', 'platform']);
    assert.equal(wrong.code, 1);
    assert.equal(wrong.json.code, 'wrong_key_type');
  });
});

describe('against a Directory whose ledger produces no blocks', () => {
  let node: RunningNode;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    const config = loadConfig(['--data-dir', join(dir, 'node'), '--directory-port', '0', '--relay-port', '0', '--cache-port', '0'], {});
    node = await checkedNode(await startNode(config, { logger: pino({ level: 'silent' }), autoProduce: false }));
    env = { DDN_DIRECTORY_URL: node.urls.directory! };
  });
  after(() => node.close());

  it('a wait that runs out exits 3 with code wait_timeout; --no-wait exits 0 once accepted', async () => {
    const key = join(dir, 'wait.pem');
    await run(['key', 'generate', '--out', key]);
    const waited = await run(['did', 'create', '--key', key, '--timeout', '0.2'], env);
    assert.equal(waited.code, 3, waited.stderr);
    assert.equal(waited.json.code, 'wait_timeout');
    assert.match(waited.stderr, /accepted: 0x[0-9a-f]{64}/);
    const noWait = await run(['did', 'create', '--key', key, '--no-wait', '--new'], env);
    assert.equal(noWait.code, 0, noWait.stderr);
    assert.equal(noWait.json.registration_status, 'pending');
    assert.match(String(noWait.json.tx_hash), /^0x[0-9a-f]{64}$/);
  });

  it('a Directory error is the JSON result with its code, exit 1', async () => {
    const r = await run(['did', 'resolve', 'did:platform:8DfbjXLth7APvt3qQPgtf'], env);
    assert.equal(r.code, 1);
    assert.deepEqual([r.json.code, r.json.error], ['did_not_found', 'did_not_found']);
  });

  it('ddn health: a ready node exits 0; one that does not answer fails (1), or with --wait times out (3)', async () => {
    const up = await run(['health', '--relay', node.urls.relay!, '--cache', node.urls.cache!], env);
    assert.equal(up.code, 0, up.stderr);
    assert.equal(up.json.ready, true);
    assert.deepEqual(Object.keys(up.json), ['ready', 'directory', 'relay', 'cache']);
    assert.equal((up.json.relay as { status: number }).status, 200);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const down = await run(['health', '--directory', `http://127.0.0.1:${port}`]);
    assert.equal(down.code, 1);
    assert.equal(down.json.code, 'not_ready');
    assert.match(String(down.json.message), /directory at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    const waited = await run(['health', '--directory', `http://127.0.0.1:${port}`, '--wait', '0.3']);
    assert.equal(waited.code, 3);
    assert.equal(waited.json.code, 'wait_timeout');
    // why, as without --wait (a script that waited in vain says what it found)
    assert.match(String(waited.json.message), /directory at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
  });

  it('an unreachable Directory is a failure, exit 1', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const r = await run(['did', 'status', 'did:platform:8DfbjXLth7APvt3qQPgtf', '--directory', `http://127.0.0.1:${port}`, '--profile', 'platform']);
    assert.equal(r.code, 1);
    assert.equal(r.json.code, 'connection_failed');
    assert.match(
      String(r.json.message),
      /^cannot reach the Directory at http:\/\/127\.0\.0\.1:\d+\/registration-status\/did%3Aplatform%3A8DfbjXLth7APvt3qQPgtf: connect ECONNREFUSED/,
    );
  });
});

describe('progress bar', () => {
  it('draws on a terminal only', () => {
    const tty = fakeIo({}, true);
    const bar = progressBar(tty, 'sending', 10);
    bar.update(5 * 1_048_576, 10 * 1_048_576, '5/10 envelopes');
    bar.finish();
    bar.finish();
    assert.equal(tty.err, '\rsending [#####-----] 50% 5.0/10.0 MiB 5/10 envelopes\n');
    const pipe = fakeIo({}, false);
    progressBar(pipe, 'sending').update(1, 2);
    assert.equal(pipe.err, '');
  });
});
