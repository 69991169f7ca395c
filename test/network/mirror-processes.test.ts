/**
 * Mirrors as real processes against a primary that starves or floods them (docs/mirrors.md): 64 WebSocket
 * clients from 64 addresses that never read hold every export stream session of a real `ddn serve`, and a real
 * `ddn mirror` still gets in and catches up; a stand-in primary that announces a block of 1,000,000,000
 * extrinsics and streams ~4 MiB lines for it stops the mirror with a verification failure while its memory stays
 * bounded (peak RSS, generous bound).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import type { WebSocket } from 'ws';
import { feedHead, registerAndChange } from '../support/mirror.js';
import { startTestNode } from '../support/network.js';
import { serveProcess, serveScratch } from '../support/serve-process.js';
import { feedOf, standInPrimary } from '../support/stand-in-primary.js';
import { nonReadingClient, type RawUpgrade } from '../support/stream-clients.js';
import { waitFor } from '../support/wait.js';

const scratch = serveScratch('ddn-mirror-proc-');
const held: RawUpgrade[] = [];
after(() => {
  for (const h of held) h.socket.destroy();
});

interface Status {
  seq: number;
  connected: boolean;
  error?: string;
}
const statusOf = async (url: string) => (await (await fetch(`${url}/mirror/status`)).json()) as Status;

/** Peak resident memory of a process, in MiB (VmHWM of /proc/<pid>/status). */
function peakRssMiB(pid: number): number {
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  assert.ok(kb !== undefined, `no VmHWM for ${pid}`);
  return Number(kb) / 1024;
}

describe('mirror processes under attack', () => {
  it('gets into a primary whose 64 export stream sessions are held by clients that never read', async () => {
    const primary = await serveProcess(['--roles', 'directory', '--data-dir', scratch.tempDir(), '--directory-port', '0', '--log-level', 'silent']);
    scratch.children.push(primary);
    const url = primary.urls.directory!;
    await registerAndChange(url, 101, 'starved');
    // the 64 holders come from 64 source addresses: to the child itself, not its contract-checking proxy
    const port = Number(new URL(primary.direct.directory!).port);
    for (let i = 0; i < 64; i++) {
      const u = await nonReadingClient(port, `127.0.0.${i + 2}`);
      held.push(u);
      assert.equal(u.status, 101, `client ${i}`);
    }
    const refused = await nonReadingClient(port, '127.0.0.100');
    assert.equal(refused.status, 503, 'every session is taken');
    const mirror = await serveProcess(['--from', url, '--data-dir', scratch.tempDir(), '--port', '0', '--log-level', 'silent'], 'mirror');
    scratch.children.push(mirror);
    const head = await feedHead(url);
    const s = await waitFor(
      'the mirror catches up',
      async () => {
        const st = await statusOf(mirror.urls.directory!);
        return st.seq >= head ? st : undefined;
      },
      { tries: 1200, everyMs: 100 },
    );
    assert.equal(s.connected, true);
    assert.equal(s.error, undefined);
    mirror.proc.kill('SIGTERM');
    assert.equal(await mirror.exited, 0);
  });

  it('stops with a verification failure, its memory bounded, when a primary announces a block of 1e9 extrinsics and streams 4 MiB lines', async () => {
    const real = await startTestNode(['--roles', 'directory']);
    let sent = 0;
    try {
      await registerAndChange(real.urls.directory!, 103, 'flooded');
      const { genesis, lines } = await feedOf(real.urls.directory!);
      const first = JSON.parse(lines.find((l) => (JSON.parse(l) as { index?: number }).index !== undefined)!) as Record<string, unknown> & { block: object };
      // ~3.8 MiB a line: the extrinsic's hex, 1.9 MiB of bytes
      const line = (index: number, seq: number) =>
        JSON.stringify({ ...first, seq, index, block: { ...first.block, extrinsic_count: 1_000_000_000 }, payload: `0x${'ab'.repeat(1_900_000)}` });
      const flood = (ws: WebSocket): void => {
        const next = (i: number): void => {
          // up to 1 GiB, as long as the mirror takes it
          if (i >= 256 || ws.readyState !== ws.OPEN) return;
          ws.send(line(i, (first.seq as number) + i), (err) => {
            if (err === undefined || err === null) {
              sent++;
              next(i + 1);
            }
          });
        };
        next(0);
      };
      const standIn = await standInPrimary(genesis, () => flood);
      try {
        const mirror = await serveProcess(['--from', standIn.url, '--data-dir', scratch.tempDir(), '--port', '0', '--log-level', 'silent'], 'mirror');
        scratch.children.push(mirror);
        // until the mirror stops (the whole flood can sit in socket buffers before the mirror reads its first line,
        // so having sent it all proves nothing; a mirror that never stops fails the wait)
        const error = await waitFor('the mirror stops with a verification failure', async () => (await statusOf(mirror.urls.directory!)).error ?? undefined, {
          tries: 2400,
          everyMs: 100,
        });
        const peak = peakRssMiB(mirror.pid);
        assert.ok(peak < 400, `peak RSS ${peak.toFixed(0)} MiB after ${sent} lines`);
        assert.match(error, /^block \d+ announces 1000000000 extrinsics; a block holds at most 1000$/);
        mirror.proc.kill('SIGTERM');
        assert.equal(await mirror.exited, 0);
      } finally {
        await standIn.close();
      }
    } finally {
      await real.stop();
    }
  });
});
