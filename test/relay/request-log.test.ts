/**
 * The Relay's log lines written while serving `POST /relay` go through the request's logger: they carry its id
 * (`reqId`), the `X-Request-Id` it came with or the one made up for it (echoed in the response) — the admission's
 * Directory lookup, the stores at remote Caches and the store in this node's own Cache (in-process).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Recipient } from '../cache/harness.js';
import { captureLogs, type LogCapture, type LogLine } from '../support/log-capture.js';
import { startRelay, type RelayHarness, type Reply } from './harness.js';

const MADE_UP_ID = /^[a-z0-9]+-[a-z0-9]+$/;

/** The lines with message `msg` written by `run`. */
async function linesOf(logs: LogCapture, msg: string, run: () => Promise<Reply>): Promise<{ res: Reply; lines: LogLine[] }> {
  const before = logs.withMsg(msg).length;
  const res = await run();
  return { res, lines: logs.withMsg(msg).slice(before) };
}

describe('Relay log lines carry the request id', () => {
  let h: RelayHarness;
  let logs: LogCapture;
  let refusing: Server;
  let r: Recipient;
  let dead: Recipient;
  let refused: Recipient;
  before(async () => {
    refusing = createServer((_req, res) => {
      res.writeHead(422, { 'content-type': 'application/json' }).end('{"error":"cache_not_published","code":"cache_not_published"}');
    });
    await new Promise<void>((ok) => refusing.listen(0, '127.0.0.1', ok));
    logs = captureLogs('debug');
    h = await startRelay({ logger: logs.logger });
    r = await h.registerRecipient(11);
    dead = await h.registerRecipient(12, { cacheEndpoints: ['http://127.0.0.1:1'] });
    refused = await h.registerRecipient(13, { cacheEndpoints: [`http://127.0.0.1:${(refusing.address() as AddressInfo).port}`] });
  });
  after(async () => {
    await h.close();
    refusing.close();
  });

  it("the store in this node's own Cache: the X-Request-Id sent, else the id made up and echoed", async () => {
    const sent = await linesOf(logs, 'cache store', () => h.post(h.envelope(r.did), { headers: { 'x-request-id': 'relay-own' } }));
    assert.equal(sent.res.status, 202, sent.res.text);
    assert.equal(sent.res.headers['x-request-id'], 'relay-own');
    assert.deepEqual(
      sent.lines.map((l) => l.reqId),
      ['relay-own'],
    );

    const none = await linesOf(logs, 'cache store', () => h.post(h.envelope(r.did)));
    assert.equal(none.res.status, 202, none.res.text);
    assert.match(String(none.res.headers['x-request-id']), MADE_UP_ID);
    assert.deepEqual(
      none.lines.map((l) => l.reqId),
      [none.res.headers['x-request-id']],
    );
  });

  it('the stores at remote Caches, failed and refused', async () => {
    const failed = await linesOf(logs, 'cache store failed', () => h.post(h.envelope(dead.did), { headers: { 'x-request-id': 'relay-dead' } }));
    assert.equal(failed.res.body.success, false, failed.res.text);
    assert.ok(failed.lines.length >= 1);
    for (const l of failed.lines) assert.equal(l.reqId, 'relay-dead');

    const no = await linesOf(logs, 'cache store refused', () => h.post(h.envelope(refused.did), { headers: { 'x-request-id': 'relay-refused' } }));
    assert.equal(no.res.body.success, false, no.res.text);
    assert.deepEqual(
      no.lines.map((l) => l.reqId),
      ['relay-refused'],
    );
  });

  it("the admission's Directory lookup warning", async () => {
    h.port.broken = true;
    try {
      const { res, lines } = await linesOf(logs, 'directory lookup failed', () => h.post(h.envelope(r.did), { headers: { 'x-request-id': 'relay-lookup' } }));
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.code, 'policy_lookup_failed');
      assert.deepEqual(
        lines.map((l) => [l.reqId, l.level]),
        [['relay-lookup', 40]],
      );
    } finally {
      h.port.broken = false;
    }
  });
});
