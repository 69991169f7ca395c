/**
 * Resumable receive (issue 42 item 2), through `ddn` child processes and a `ddn serve` node: a receive interrupted
 * with SIGINT says how far it got and keeps its part; the next run checks the kept chunks, continues from there and
 * writes the file byte-identical; a part that no longer matches its record is cut back to its good chunks; a
 * finished run leaves no part behind (not even an old one).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockOutputDir } from '../../src/cli/receive-lock.js';
import { ddn, spawnDdn, startServe, type ServeNode } from './cli-process.js';

const MiB = 1_048_576;
let dir: string;
let node: ServeNode;
let env: NodeJS.ProcessEnv;

const path = (name: string) => join(dir, name);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const parts = (out: string) => readdirSync(out).filter((f) => f.startsWith('.ddn-partial-'));

/** A stand-in in front of the Cache (the Cache URL DIDs publish): passes everything on until `hang` is set. */
let hang = false;
let passed = 0;
const held = new Set<ServerResponse>();
const proxy = createServer((req, res) => {
  // with `hang`, the 21st and later message reads are never answered
  if (hang && req.url?.startsWith('/cache/message/') === true && passed >= 20) {
    held.add(res);
    return;
  }
  if (req.url?.startsWith('/cache/message/') === true) passed++;
  const upstream = request(new URL(req.url ?? '/', node.cache), { method: req.method, headers: req.headers }, (up) => {
    res.writeHead(up.statusCode ?? 502, up.headers);
    up.pipe(res);
  });
  req.pipe(upstream);
});
let proxyUrl: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ddn-cli-receive-resume-'));
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
  node = await startServe(path('data'), [
    '--allow-private-endpoints',
    '--block-time-ms',
    '20',
    '--relay-max-unchunked-bytes',
    '1048576',
    '--public-cache-url',
    proxyUrl,
  ]);
  env = { DDN_DIRECTORY_URL: node.directory, DDN_RELAY_URL: node.relay, XDG_STATE_HOME: path('state'), XDG_CONFIG_HOME: path('config') };
  const r = await ddn(['did', 'create', '--alias', 'dora', '--relay', node.relay, '--cache', proxyUrl], { env });
  assert.equal(r.code, 0, r.stderr);
});

after(async () => {
  for (const r of held) r.destroy();
  proxy.close();
  await node?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Sends `data` to dora in chunks of 64 KiB. */
async function send(data: Buffer, name: string): Promise<void> {
  writeFileSync(path(name), data);
  const r = await ddn(['send', '--to', 'dora', '--input', path(name), '--chunk-size', '65536'], { env });
  assert.equal(r.code, 0, r.stderr);
}

/** Starts a receive into `out` and interrupts it with SIGINT once it wrote `atLeast` bytes of the part. */
async function interruptedReceive(out: string, atLeast: number): Promise<Record<string, unknown>> {
  const child = spawnDdn(['receive', '--output-dir', out], { env });
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      const part = parts(out).find((f) => !f.endsWith('.json'));
      if (part !== undefined && existsSync(join(out, part)) && statSync(join(out, part)).size >= atLeast) {
        clearInterval(timer);
        child.proc.kill('SIGINT');
        resolve();
      }
    }, 5);
    void child.exit.then(() => {
      clearInterval(timer);
      reject(new Error(`the receive ended before it was interrupted:\n${child.stderr()}`));
    });
  });
  assert.equal(await child.exit, 130, child.stderr());
  return JSON.parse(child.stdout()) as Record<string, unknown>;
}

describe('an interrupted receive continues where it stopped', () => {
  it('says how far it got, keeps the part, and the next run finishes it byte-identical', async () => {
    const data = randomBytes(12 * MiB);
    await send(data, 'resume-me.bin');
    const out = path('out-resume');
    mkdirSync(out);
    const stopped = await interruptedReceive(out, 2 * MiB);
    assert.equal(stopped.code, 'interrupted', JSON.stringify(stopped));
    const receiving = stopped.receiving as { name: string; received_bytes: number; total_bytes: number };
    assert.equal(receiving.name, 'resume-me.bin');
    assert.equal(receiving.total_bytes, 12 * MiB);
    // what the last reported chunk brought it to (the part may hold a chunk more, written as the signal came)
    assert.ok(receiving.received_bytes >= MiB && receiving.received_bytes < 12 * MiB, JSON.stringify(stopped));
    assert.match(stopped.resume as string, /run the same command again/);
    // (a record being rewritten when the signal came may leave its temporary file too: the next run removes it)
    assert.equal(parts(out).filter((f) => !f.includes('.json.')).length, 2, 'the part and its record are kept');

    const again = await ddn(['receive', '--output-dir', out], { env });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /resuming resume-me\.bin: \d+ of 192 chunk\(s\), \d+ bytes kept/);
    assert.deepEqual(
      (again.json.files as { name: string }[]).map((f) => f.name),
      ['resume-me.bin'],
    );
    assert.equal(sha(readFileSync(join(out, 'resume-me.bin'))), sha(data));
    assert.deepEqual(readdirSync(out), ['resume-me.bin'], 'no part outlives a finished run');
  });

  it('a damaged part is checked chunk by chunk and continued from its last good chunk', async () => {
    const data = randomBytes(6 * MiB);
    await send(data, 'damaged.bin');
    const out = path('out-damaged');
    mkdirSync(out);
    await interruptedReceive(out, 2 * MiB);
    const part = join(
      out,
      parts(out).find((f) => !f.endsWith('.json'))!,
    );
    // flip a byte inside the second chunk: chunks from there on are downloaded again
    const bytes = readFileSync(part);
    bytes[65536 + 10] = bytes[65536 + 10]! ^ 0xff;
    writeFileSync(part, bytes);
    const again = await ddn(['receive', '--output-dir', out], { env });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /resuming damaged\.bin: 1 of 96 chunk\(s\), 65536 bytes kept/);
    assert.equal(sha(readFileSync(join(out, 'damaged.bin'))), sha(data));
    assert.deepEqual(readdirSync(out), ['damaged.bin']);
  });

  it('one run at a time writes into a directory: a second is refused while the first holds it', async () => {
    const out = path('out-locked');
    mkdirSync(out);
    const held = lockOutputDir(env, out);
    try {
      const refused = await ddn(['receive', '--output-dir', out], { env });
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(refused.stderr, /another ddn receive is writing into .*out-locked/);
      assert.equal(refused.json.code, 'output_dir_in_use');
    } finally {
      held.release();
    }
    const r = await ddn(['receive', '--output-dir', out], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(readdirSync(out), [], 'the lock lives under $XDG_STATE_HOME, not in the output directory');
  });

  it('a finished run removes parts whose message no Cache lists any more', async () => {
    const out = path('out-stale');
    mkdirSync(out);
    writeFileSync(join(out, '.ddn-partial-0123456789ab'), randomBytes(1000));
    const r = await ddn(['receive', '--output-dir', out], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /removed .*\.ddn-partial-0123456789ab: no Cache lists its message any more/);
    assert.deepEqual(readdirSync(out), []);
  });

  it('a Cache that stops answering part-way: the file is suspended (result and stderr), and the next run finishes it', async () => {
    const flo = await ddn(['did', 'create', '--alias', 'flo', '--relay', node.relay, '--cache', proxyUrl], { env });
    assert.equal(flo.code, 0, flo.stderr);
    const data = randomBytes(3 * MiB);
    writeFileSync(path('flo.bin'), data);
    const sent = await ddn(['send', '--to', 'flo', '--input', path('flo.bin'), '--chunk-size', '65536'], { env });
    assert.equal(sent.code, 0, sent.stderr);
    const out = path('out-flo');
    mkdirSync(out);
    hang = true;
    passed = 0;
    const stalled = await ddn(['receive', '--did', 'flo', '--output-dir', out, '--answer-timeout', '1'], { env });
    assert.equal(stalled.code, 1, stalled.stderr);
    const suspended = stalled.json.suspended as { name: string; received_bytes: number; total_bytes: number; partial: string }[];
    assert.equal(suspended.length, 1, JSON.stringify(stalled.json));
    assert.deepEqual([suspended[0]!.name, suspended[0]!.received_bytes, suspended[0]!.total_bytes], ['flo.bin', 20 * 65536, 3 * MiB]);
    assert.equal((stalled.json.errors as { code: string }[])[0]!.code, 'request_timeout');
    assert.match(stalled.stderr, /waiting for the Cache at http:\/\/127\.0\.0\.1:\d+\/cache\/message\//);
    assert.match(stalled.stderr, /kept 1310720 of 3145728 bytes of flo\.bin in .*\.ddn-partial-/);
    assert.ok(existsSync(suspended[0]!.partial), 'the part is kept');

    hang = false;
    const again = await ddn(['receive', '--did', 'flo', '--output-dir', out], { env });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /resuming flo\.bin: 20 of 48 chunk\(s\), 1310720 bytes kept/);
    assert.equal(sha(readFileSync(join(out, 'flo.bin'))), sha(data));
    assert.deepEqual(readdirSync(out), ['flo.bin']);
  });
});
