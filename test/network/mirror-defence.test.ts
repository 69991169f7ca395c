/**
 * A mirror defends itself against its primary (docs/mirrors.md): stand-in primaries that serve a real Directory's
 * genesis and feed, and misbehave. An upgrade never answered and a connection that goes silent are dropped and
 * tried again; a frame that is not a feed line is a transport error, retried, after which the mirror catches up;
 * a block larger than the bounds does not verify; and `/mirror/status` names the first block that did not verify,
 * not what came after it. Real sockets; the mirror runs in this process with short timeouts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FollowerLimits } from '../../src/mirror/follower.js';
import { registerAndChange, startTestMirror, type TestMirror } from '../support/mirror.js';
import { startTestNode, type TestNode } from '../support/network.js';
import { feedOf, sendFeed, standInPrimary, type StandInPrimary, type UpgradeBehaviour } from '../support/stand-in-primary.js';
import { waitFor } from '../support/wait.js';

interface Status {
  seq: number;
  connected: boolean;
  error?: string;
  last_connection_error?: string;
}

describe('a mirror that defends itself', () => {
  let primary: TestNode;
  let feed: { genesis: string; lines: string[] };
  const opened: { mirror: TestMirror; standIn: StandInPrimary }[] = [];

  before(async () => {
    primary = await startTestNode(['--roles', 'directory']);
    await registerAndChange(primary.urls.directory!, 81, 'defended');
    await registerAndChange(primary.urls.directory!, 83, 'defended-too');
    feed = await feedOf(primary.urls.directory!);
  });
  after(async () => {
    for (const { mirror, standIn } of opened) {
      await mirror.stop();
      await standIn.close();
    }
    await primary?.stop();
  });

  async function mirrorOf(behaviour: (n: number) => UpgradeBehaviour, limits: Partial<FollowerLimits> = {}) {
    const standIn = await standInPrimary(feed.genesis, behaviour);
    const mirror = await startTestMirror(standIn.url, undefined, { followerLimits: { handshakeTimeoutMs: 200, pingIntervalMs: 200, ...limits } });
    opened.push({ mirror, standIn });
    const status = async () => (await (await fetch(`${mirror.url}/mirror/status`)).json()) as Status;
    return { standIn, mirror, status };
  }

  const lastSeq = () => (JSON.parse(feed.lines.at(-1)!) as { seq: number }).seq;

  it('tries again when the primary never answers the upgrade', async () => {
    const { standIn, status } = await mirrorOf(() => 'hang');
    await waitFor('a third upgrade', async () => (standIn.upgrades >= 3 ? true : undefined));
    const s = await status();
    assert.equal(s.connected, false);
    assert.equal(s.error, undefined);
    assert.match(s.last_connection_error ?? '', /handshake has timed out/);
  });

  it('drops a connection that brings nothing, not even a pong, and tries again', async () => {
    const { standIn, status } = await mirrorOf(() => 'silent');
    await waitFor('a third upgrade', async () => (standIn.upgrades >= 3 ? true : undefined));
    const s = await status();
    assert.equal(s.error, undefined);
    assert.match(s.last_connection_error ?? '', /^nothing from the primary for 200 ms$/);
  });

  it('retries after a binary frame, a frame that is not JSON and JSON that is no feed line, then catches up', async () => {
    const junk: UpgradeBehaviour[] = [
      (ws) => ws.send(Buffer.from([1, 2, 3])),
      (ws) => ws.send('<html><body>502 Bad Gateway</body></html>'),
      (ws) => ws.send('{"code":"bad_gateway"}'),
    ];
    const { standIn, mirror, status } = await mirrorOf((n) => junk[n] ?? ((ws, cursor) => sendFeed(ws, feed.lines, cursor)), { pingIntervalMs: 60_000 });
    await waitFor('the mirror catches up', async () => (mirror.follower.seq >= lastSeq() ? true : undefined));
    assert.ok(standIn.upgrades >= 4, `${standIn.upgrades} upgrades`);
    const s = await status();
    assert.equal(s.error, undefined);
    assert.equal(s.seq, lastSeq());
    assert.equal(s.connected, true);
    assert.equal(s.last_connection_error, undefined);
  });

  it('names the first block that did not verify, not the lines after it', async () => {
    // the first extrinsic of the second-to-last block with a block after it, one hex digit changed
    const parsed = feed.lines.map((l) => JSON.parse(l) as { seq: number; index?: number; payload?: string; block: { number: number } });
    const lastBlock = parsed.at(-1)!.block.number;
    const at = parsed.findIndex((l) => l.index !== undefined && l.block.number < lastBlock - 1);
    const line = parsed[at]!;
    const tampered = [...feed.lines];
    tampered[at] = JSON.stringify({ ...line, payload: `${line.payload!.slice(0, -1)}${line.payload!.at(-1) === '0' ? '1' : '0'}` });
    const { mirror, status } = await mirrorOf(() => (ws, cursor) => sendFeed(ws, tampered, cursor), { pingIntervalMs: 60_000 });
    const error = await waitFor('the mirror stops following', async () => (await status()).error);
    assert.equal(error, `block ${line.block.number}: its extrinsics do not match its extrinsics root`);
    assert.equal(mirror.ledger.headNumber, line.block.number - 1);
    assert.equal(mirror.follower.status().error, error);
  });

  it('refuses a block that announces more extrinsics than a block holds, before gathering it', async () => {
    const first = JSON.parse(feed.lines.find((l) => (JSON.parse(l) as { index?: number }).index !== undefined)!) as {
      block: { number: number; extrinsic_count: number };
    };
    const huge = JSON.stringify({ ...first, block: { ...first.block, extrinsic_count: 1_000_000_000 } });
    const { status } = await mirrorOf(() => (ws) => ws.send(huge), { pingIntervalMs: 60_000 });
    const error = await waitFor('the mirror stops following', async () => (await status()).error);
    assert.equal(error, `block ${first.block.number} announces 1000000000 extrinsics; a block holds at most 1000`);
  });

  it('refuses a line over --max-line-bytes and a block over --max-block-bytes', async () => {
    const long = `{"seq":1,"pad":"${'x'.repeat(4096)}"}`;
    const lineCapped = await mirrorOf(() => (ws) => ws.send(long), { pingIntervalMs: 60_000, maxLineBytes: 2048 });
    assert.equal(await waitFor('the line is refused', async () => (await lineCapped.status()).error), 'a feed line after entry 0 is larger than 2048 bytes');
    const blockCapped = await mirrorOf(() => (ws, cursor) => sendFeed(ws, feed.lines, cursor), { pingIntervalMs: 60_000, maxBlockBytes: 1024 });
    const error = await waitFor('the block is refused', async () => (await blockCapped.status()).error);
    assert.match(error, /^block \d+ is larger than 1024 bytes of feed lines \(after \d+ of its \d+ extrinsics\)$/);
  });

  it('does not read a genesis of more than 64 KiB at its first start', async () => {
    const standIn = await standInPrimary(`{"pad":"${'x'.repeat(8 * 1024 * 1024)}"}`, () => 'hang');
    try {
      await assert.rejects(startTestMirror(standIn.url), /answered more than 65536 bytes; is it a ddn Directory\?/);
    } finally {
      await standIn.close();
    }
  });
});
