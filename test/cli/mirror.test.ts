/**
 * `ddn mirror` as a real child process: the same listening line as `ddn serve`, a mirror that follows its primary,
 * a clean exit on SIGTERM; misuse exits 2 naming the option.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { main } from '../../src/cli/main.js';
import { parseMirrorArgs } from '../../src/cli/mirror.js';
import { DEFAULT_RATE_BUDGETS } from '../../src/http/rate-limit.js';
import type { CliIo } from '../../src/cli/io.js';
import { feedHead, registerAndChange } from '../support/mirror.js';
import { startTestNode } from '../support/network.js';
import { serveProcess } from '../support/serve-process.js';
import { waitFor } from '../support/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'ddn-mirror-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('ddn mirror', () => {
  it('prints the listening line, follows the primary and stops on SIGTERM', async () => {
    const primary = await startTestNode(['--roles', 'directory']);
    try {
      await registerAndChange(primary.urls.directory!, 111, 'cli-mirror');
      const m = await serveProcess(['--from', primary.urls.directory!, '--data-dir', dir, '--port', '0', '--log-level', 'silent'], 'mirror');
      try {
        assert.match(m.urls.directory ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
        const head = await feedHead(primary.urls.directory!);
        const status = await waitFor('the mirror catches up', async () => {
          const s = (await (await fetch(`${m.urls.directory!}/mirror/status`)).json()) as { seq: number; primary_url: string; connected: boolean };
          return s.seq >= head ? s : undefined;
        });
        assert.equal(status.primary_url, primary.urls.directory);
        assert.equal(status.connected, true);
      } finally {
        m.proc.kill('SIGTERM');
        assert.equal(await m.exited, 0);
      }
    } finally {
      await primary.stop();
    }
  });

  it('exits 2 on misuse, naming the option, and 1 when the primary cannot be reached on a first start', async () => {
    const run = async (args: string[]): Promise<{ code: number; stderr: string; stdout: string }> => {
      let stderr = '';
      let stdout = '';
      const io: CliIo = {
        stdout: (t) => void (stdout += t),
        stderr: (t) => void (stderr += t),
        env: {},
        shutdownSignal: () => new Promise(() => undefined),
      };
      return { code: await main(['mirror', ...args], io), stderr, stdout };
    };
    const cases: [string[], number, RegExp][] = [
      [['--data-dir', dir], 2, /--from is required/],
      [['--from', 'ftp://x'], 2, /--from: not an http\(s\) URL/],
      [['--from', 'http://127.0.0.1:1', '--port', '70000'], 2, /--port: not a port number/],
      [['--from', 'http://127.0.0.1:1', '--log-level', 'loud'], 2, /--log-level/],
      [['--from', 'http://127.0.0.1:1', '--bogus'], 2, /bogus/],
      [['--from', 'http://127.0.0.1:1', '--metrics-token', 'short'], 2, /--metrics-token: must be 16 to 256 visible ASCII/],
      [['--from', 'http://127.0.0.1:1', '--max-line-bytes', '12'], 2, /--max-line-bytes: must be an integer from 1024 to 1073741824, got '12'/],
      [['--from', 'http://127.0.0.1:1', '--max-block-bytes', 'lots'], 2, /--max-block-bytes: must be an integer from 1024/],
      [['--from', 'http://127.0.0.1:1', '--handshake-timeout-ms', '0'], 2, /--handshake-timeout-ms: must be an integer from 1 to 600000/],
      [
        ['--from', 'http://127.0.0.1:1', '--export-stream-max-sessions-per-address', '0'],
        2,
        /--export-stream-max-sessions-per-address: must be an integer from 1/,
      ],
      [['--from', 'http://127.0.0.1:1', '--ping-interval-ms', 'soon'], 2, /--ping-interval-ms: must be an integer from 1 to 600000, got 'soon'/],
      [['--from', 'http://127.0.0.1:1', '--max-connections-per-address', 'many'], 2, /--max-connections-per-address: must be an integer from 0 .*, got 'many'/],
      [['--from', 'http://127.0.0.1:1', '--http-body-budget-bytes', '1e9'], 2, /--http-body-budget-bytes: must be an integer from 0 .*, got '1e9'/],
      [['--from', 'http://127.0.0.1:1', '--rate-limit-read', 'lots'], 2, /--rate-limit-read: must be N\/PERIOD .*got 'lots'/],
      [['--from', 'http://127.0.0.1:1', '--rate-limit', 'never'], 2, /--rate-limit: must be on, off or a factor/],
      [['--from', 'http://127.0.0.1:1', '--trusted-proxies', 'nowhere'], 2, /--trusted-proxies: /],
      [['--from', 'http://127.0.0.1:1', '--rate-limit-registration', '1/1m'], 2, /rate-limit-registration/],
      [['--from', 'http://127.0.0.1:1', '--data-dir', join(dir, 'fresh'), '--port', '0', '--log-level', 'silent'], 1, /cannot read the primary's genesis/],
    ];
    for (const [args, code, message] of cases) {
      const r = await run(args);
      assert.equal(r.code, code, args.join(' '));
      assert.match(r.stderr, message);
      assert.equal(r.stdout, '');
    }
    const help = await run(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /usage: ddn mirror --from/);
    for (const flag of ['--max-line-bytes', '--max-block-bytes', '--handshake-timeout-ms', '--ping-interval-ms']) assert.match(help.stdout, new RegExp(flag));
  });
  it('shows in its help, for each option, the default it takes when the option is not given', async () => {
    let stdout = '';
    const io: CliIo = { stdout: (t) => void (stdout += t), stderr: () => undefined, env: {}, shutdownSignal: () => new Promise(() => undefined) };
    assert.equal(await main(['mirror', '--help'], io), 0);
    const taken = parseMirrorArgs(['--from', 'http://127.0.0.1:1'], {});
    assert.ok(!('help' in taken) && !('error' in taken));
    /** The help text of `flag`: its line and the indented lines after it, on one line. */
    const helpOf = (flag: string): string => {
      const at = stdout.indexOf(`\n  ${flag} `);
      assert.ok(at >= 0, `${flag} is in the help`);
      const end = stdout.indexOf('\n  --', at + 1);
      return stdout.slice(at, end < 0 ? undefined : end).replace(/\s+/g, ' ');
    };
    const defaults: [string, string | number][] = [
      ['--data-dir', taken.dataDir],
      ['--host', taken.host],
      ['--port', taken.port],
      ['--log-level', taken.logLevel],
      ['--max-line-bytes', taken.followerLimits.maxLineBytes],
      ['--max-block-bytes', taken.followerLimits.maxBlockBytes],
      ['--handshake-timeout-ms', taken.followerLimits.handshakeTimeoutMs],
      ['--ping-interval-ms', taken.followerLimits.pingIntervalMs],
    ];
    for (const [flag, value] of defaults) assert.ok(helpOf(flag).includes(`(default ${value};`), `${flag}: ${helpOf(flag)}`);
    const { maxSessions, maxSessionsPerAddress, pingIntervalMs } = taken.streamLimits;
    assert.ok(helpOf('--export-stream-max-sessions').includes(`(defaults ${maxSessions}, ${maxSessionsPerAddress}, ${pingIntervalMs};`));
    const { maxConnections, maxConnectionsPerAddress } = taken.connectionCaps;
    assert.ok(helpOf('--max-connections').includes(`defaults ${maxConnections}, ${maxConnectionsPerAddress};`));
    const { maxBytes, maxBytesPerAddress } = taken.bodyBudget;
    assert.ok(helpOf('--http-body-budget-bytes').includes(`defaults ${maxBytes}, ${maxBytesPerAddress};`));
    assert.ok(maxConnections > 0 && maxConnectionsPerAddress > 0 && maxBytes > 0 && maxBytesPerAddress > 0, 'bounded by default');
  });

  it('takes its connection caps and body budget as ddn serve does: the flag, else DDN_<NAME>', () => {
    const taken = parseMirrorArgs(['--from', 'http://127.0.0.1:1', '--max-connections', '0', '--http-body-budget-per-address-bytes', '4096'], {
      DDN_MAX_CONNECTIONS: '7',
      DDN_MAX_CONNECTIONS_PER_ADDRESS: '3',
      DDN_HTTP_BODY_BUDGET_BYTES: '65536',
    });
    assert.ok(!('help' in taken) && !('error' in taken));
    assert.deepEqual(taken.connectionCaps, { maxConnections: 0, maxConnectionsPerAddress: 3 });
    assert.deepEqual(taken.bodyBudget, { maxBytes: 65536, maxBytesPerAddress: 4096 });
  });

  it('takes the rate limits of reads as ddn serve does: on by default, the flag, else DDN_<NAME>, or off', () => {
    const read = (args: string[], env: NodeJS.ProcessEnv = {}) => {
      const taken = parseMirrorArgs(['--from', 'http://127.0.0.1:1', ...args], env);
      assert.ok(!('help' in taken) && !('error' in taken), JSON.stringify(taken));
      return taken.rateLimits;
    };
    assert.deepEqual(read([])?.budgets.read, DEFAULT_RATE_BUDGETS.read);
    assert.deepEqual(read(['--rate-limit-read', '5/10s'])?.budgets.read, { points: 5, seconds: 10 });
    assert.deepEqual(read([], { DDN_RATE_LIMIT_READ: '7/1m' })?.budgets.read, { points: 7, seconds: 60 });
    assert.deepEqual(read(['--rate-limit', '2'])?.budgets.read, { points: DEFAULT_RATE_BUDGETS.read.points * 2, seconds: 60 });
    assert.deepEqual(read(['--trusted-proxies', '10.0.0.1', '--trusted-proxies', '10.1.0.0/16'])?.trustedProxies, ['10.0.0.1', '10.1.0.0/16']);
    assert.equal(read(['--rate-limit', 'off']), null);
    assert.equal(read([], { DDN_RATE_LIMIT: 'off' }), null);
  });
});
