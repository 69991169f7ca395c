/**
 * Live sessions answer pings or lose their place (`--relay-live-ping-interval-ms`): a session that leaves a ping
 * unanswered until the next is due is closed, which frees the DID's per-DID slot; one that answers stays open and
 * keeps receiving envelopes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { isoSeconds, registerRecipientAt, type Recipient } from '../cache/harness.js';
import { fetchJson, httpDirectory } from '../cache/http-support.js';
import { connectLive, liveHeaders, type LiveClient } from '../support/live.js';
import { startTestNode, type TestNode } from '../support/network.js';

const enc = encodeURIComponent;

describe('live sessions and pings', () => {
  let node: TestNode;
  let r: Recipient;
  let wsBase: string;
  before(async () => {
    node = await startTestNode(['--relay-live-ping-interval-ms', '100', '--relay-max-sessions-per-did', '1']);
    r = await registerRecipientAt(httpDirectory(node), 93, { cacheEndpoints: [node.urls.cache!] });
    wsBase = `${node.urls.relay!.replace('http://', 'ws://')}/ws`;
  });
  after(() => node.stop());

  const connect = (device: string, autoPong = true): Promise<LiveClient> =>
    connectLive(`${wsBase}/${enc(r.did)}/${enc(device)}`, liveHeaders(r, device, node.urls.relay!), { autoPong });
  /** Resolves once the client has been pinged `n` times. */
  const pinged = (c: LiveClient, n: number): Promise<void> =>
    new Promise((resolve) => {
      let seen = 0;
      c.ws.on('ping', () => {
        if (++seen === n) resolve();
      });
    });

  it('closes a session that does not answer pings, and its DID may open another', { timeout: 20_000 }, async () => {
    const silent = await connect('silent', false);
    await pinged(silent, 1);
    await silent.closed;
    // the per-DID cap (1) no longer counts it
    const next = await connect('next');
    await pinged(next, 3);
    assert.equal(next.ws.readyState, next.ws.OPEN);
    const message_id = randomUUID();
    const res = await fetchJson(`${node.urls.relay}/relay`, {
      body: { message_id, to: r.did, timestamp: isoSeconds(Date.now()), payload: { ciphertext_b64: 'AAAA' } },
    });
    assert.equal(res.status, 202);
    assert.equal(JSON.parse(await next.frame(1)).message_id, message_id);
    next.ws.close();
    await once(next.ws, 'close');
  });
});
