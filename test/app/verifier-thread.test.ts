/**
 * The node's verifier thread (src/app/verifier-thread.ts): its deaths logged as a SQLite writer's are (error level,
 * the thread's error, `restarted`), and, in `ddn serve` children of each set of roles, the thread and its gauge
 * `ddn_verifier_pending_signatures` go together: a process that runs the thread exposes the gauge, one that runs
 * none (a Directory, a Relay) has neither.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { verifierDeathLogger } from '../../src/app/verifier-thread.js';
import { keyPairFromSeed } from '../../src/crypto/ed25519.js';
import { MAX_THREAD_DEATHS, VerifierThread } from '../../src/crypto/verify-thread.js';
import { captureLogs } from '../support/log-capture.js';
import { scrape } from '../support/metrics.js';
import { serveProcess, serveScratch, type ServeProcess } from '../support/serve-process.js';
import { waitFor } from '../support/wait.js';

const kp = keyPairFromSeed(new Uint8Array(32).fill(9));
const text = new TextEncoder().encode('a proof');
const sig = kp.sign(text);
const DIED = 'verifier thread died; a new one takes over';
const GAVE_UP = 'verifier thread keeps dying; signatures are verified on the thread pool from now on';

describe("the verifier thread's deaths in the log", () => {
  it('logs each death at error level with the error it ended on and whether a thread took over', async () => {
    const logs = captureLogs();
    const t = new VerifierThread(
      () => new Worker("require('node:worker_threads').parentPort.once('message', () => { throw new Error('verifier broke'); });", { eval: true }),
    );
    t.onThreadExit = verifierDeathLogger(logs.logger);
    try {
      for (let i = 0; i <= MAX_THREAD_DEATHS; i++) assert.equal(await t.verify(kp.publicKey, [text], sig), true, 'the verdict survives the death');
    } finally {
      await t.close();
    }
    const died = logs.withMsg(DIED);
    const gaveUp = logs.withMsg(GAVE_UP);
    assert.equal(died.length, MAX_THREAD_DEATHS);
    assert.equal(gaveUp.length, 1);
    for (const line of [...died, ...gaveUp]) {
      assert.equal(line.level, 50, 'error level');
      assert.equal((line.err as { message?: string } | undefined)?.message, 'verifier broke');
    }
    assert.ok(died.every((l) => l.restarted === true));
    assert.equal(gaveUp[0]!.restarted, false);
  });
});

/** Names of the threads of process `pid`. */
const threadNames = (pid: number): string[] =>
  readdirSync(`/proc/${pid}/task`).flatMap((t) => {
    try {
      return [readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim()];
    } catch {
      return []; // a thread that ended meanwhile
    }
  });

describe('a ddn serve process: its verifier thread and its gauge go together', () => {
  const scratch = serveScratch('ddn-verifier-');
  const start = async (roles: string, ports: string[], more: string[] = []): Promise<ServeProcess> => {
    const p = await serveProcess([
      '--log-level',
      'warn',
      '--roles',
      roles,
      '--data-dir',
      scratch.tempDir(),
      ...ports.flatMap((r) => [`--${r}-port`, '0']),
      ...more,
    ]);
    scratch.children.push(p);
    return p;
  };
  const gaugeOf = async (p: ServeProcess): Promise<boolean> => {
    const base = p.direct.directory ?? p.direct.relay ?? p.direct.cache!;
    return (await scrape(base)).some((s) => s.name === 'ddn_verifier_pending_signatures');
  };
  const hasThread = (p: ServeProcess) => threadNames(p.pid).includes('ddn-verify');

  it('a combined node and a Cache-only process run the thread and expose the gauge; a Directory- or Relay-only process neither', async () => {
    const combined = await start('directory,relay,cache', ['directory', 'relay', 'cache']);
    const directory = await start('directory', ['directory']);
    const remote = ['--directory-url', directory.direct.directory!];
    const cache = await start('cache', ['cache'], remote);
    const relay = await start('relay', ['relay'], [...remote, '--allow-private-endpoints']);

    for (const p of [combined, cache]) {
      await waitFor('the verifier thread is named', () => Promise.resolve(hasThread(p) || undefined), { everyMs: 50 });
      assert.equal(await gaugeOf(p), true);
    }
    for (const p of [directory, relay]) {
      assert.equal(await gaugeOf(p), false);
      assert.equal(hasThread(p), false, threadNames(p.pid).join(', '));
    }
  });
});
