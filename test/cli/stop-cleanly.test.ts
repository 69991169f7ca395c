/**
 * Issue 25, item 1: `npm start`, `npx ddn serve` and `node bin/ddn.js serve` stop cleanly on SIGTERM and SIGINT,
 * leaving no process and no listening port. npm runs a command through `sh -c` and forwards a signal to that shell
 * only: on SIGTERM the shell dies without passing it on, so a `ddn` started by npm also stops when its parent goes
 * away (src/cli/io.ts); `npm start` execs node (package.json), so the signal reaches it directly. A SIGINT sent to
 * npx's pid alone stays with its shell (which waits for its child): Ctrl-C signals the whole foreground process
 * group, and that is what the npx SIGINT case sends. The launchers run from a scratch copy of the package as `npm ci` leaves it
 * (test/support/ddn-package.ts).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { buildDdnPackage } from '../support/ddn-package.js';
import { descendants, isRunning, portIsFree, signalIfRunning } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

let pkg: string;
before(async () => {
  pkg = await buildDdnPackage();
});
after(() => rmSync(pkg, { recursive: true, force: true }));

const SERVE = ['--data-dir', '.ddn-data', '--directory-port', '0', '--relay-port', '0', '--cache-port', '0', '--log-level', 'warn'];
/** Each launcher, and whom each signal goes to: the launcher's pid, or its process group as Ctrl-C does. */
const LAUNCHERS: Record<string, [string, string[], Record<'SIGTERM' | 'SIGINT', 'launcher' | 'group (Ctrl-C)'>]> = {
  'npm start': ['npm', ['start', '--', ...SERVE], { SIGTERM: 'launcher', SIGINT: 'launcher' }],
  'npx ddn serve': ['npx', ['ddn', 'serve', ...SERVE], { SIGTERM: 'launcher', SIGINT: 'group (Ctrl-C)' }],
  'node bin/ddn.js serve': [process.execPath, ['bin/ddn.js', 'serve', ...SERVE], { SIGTERM: 'launcher', SIGINT: 'launcher' }],
};

describe('every way of starting a node stops cleanly', () => {
  for (const [name, [command, args, targets]] of Object.entries(LAUNCHERS)) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      it(`${name}: ${signal} to the ${targets[signal]} leaves no process and frees the ports`, async () => {
        const dataDir = mkdtempSync(join(pkg, 'data-'));
        const argv = args.map((a) => (a === '.ddn-data' ? relative(pkg, dataDir) : a));
        // its own process group, so that a failure can clean up everything it started
        const proc = spawn(command, argv, { cwd: pkg, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DDN_LOG_LEVEL: 'warn' } });
        let out = '';
        let err = '';
        proc.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
        const exited = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)));
        try {
          const line = await new Promise<Record<string, string>>((resolve, reject) => {
            proc.stdout.setEncoding('utf8').on('data', (s: string) => {
              out += s;
              const found = out.split('\n').find((l) => l.startsWith('{"event":"listening"'));
              if (found !== undefined && out.includes(`${found}\n`)) resolve(JSON.parse(found) as Record<string, string>);
            });
            void exited.then((code) => reject(new Error(`${name} exited ${code} before listening:\n${out}\n${err}`)));
          });
          const ports = ['directory_url', 'relay_url', 'cache_url'].map((k) => Number(new URL(line[k]!).port));
          const tree = descendants(proc.pid!);
          assert.ok(tree.length > 0 || name.startsWith('node'), `${name} runs the node as a child`);
          if (targets[signal] === 'launcher') proc.kill(signal);
          else process.kill(-proc.pid!, signal);
          await exited;
          for (const pid of [proc.pid!, ...tree])
            await waitFor(`process ${pid} (${name}) to exit after ${signal}`, async () => (isRunning(pid) ? undefined : true), { tries: 600, everyMs: 50 });
          for (const port of ports) assert.equal(await portIsFree(port), true, `port ${port} is free after ${name} stopped`);
        } finally {
          signalIfRunning(-proc.pid!, 'SIGKILL');
        }
      });
    }
  }
});
