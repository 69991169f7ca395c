/**
 * The Cache's log lines written while serving a request go through the request's logger: they carry its id
 * (`reqId`), the `X-Request-Id` it came with or the one made up for it (echoed in the response).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { captureLogs, type LogCapture, type LogLine } from '../support/log-capture.js';
import { ackBody, expectError, startCache, type CacheHarness, type Recipient, type Reply } from './harness.js';

const enc = encodeURIComponent;
const MADE_UP_ID = /^[a-z0-9]+-[a-z0-9]+$/;

/** The lines with message `msg` written by `run` (exactly one expected). */
async function lineOf(logs: LogCapture, msg: string, run: () => Promise<Reply>): Promise<{ res: Reply; line: LogLine }> {
  const before = logs.withMsg(msg).length;
  const res = await run();
  const added = logs.withMsg(msg).slice(before);
  assert.equal(added.length, 1, `one "${msg}" line, got ${JSON.stringify(added)}`);
  return { res, line: added[0]! };
}

describe('Cache log lines carry the request id', () => {
  let h: CacheHarness;
  let r: Recipient;
  let logs: LogCapture;
  before(async () => {
    logs = captureLogs('debug');
    h = await startCache({ logger: logs.logger });
    r = await h.registerRecipient(11);
  });
  after(() => h.close());

  it('the store line (debug): the X-Request-Id sent, else the id made up and echoed', async () => {
    const sent = await lineOf(logs, 'cache store', () => h.storeRaw(h.envelope(r.did), { 'x-request-id': 'store-1' }));
    assert.equal(sent.res.status, 202, sent.res.text);
    assert.equal(sent.res.headers['x-request-id'], 'store-1');
    assert.equal(sent.line.reqId, 'store-1');
    assert.equal(sent.line.message_id, sent.res.body.message_id);

    const none = await lineOf(logs, 'cache store', () => h.storeRaw(h.envelope(r.did)));
    assert.equal(none.res.status, 202, none.res.text);
    assert.match(String(none.line.reqId), MADE_UP_ID);
    assert.equal(none.line.reqId, none.res.headers['x-request-id']);
  });

  it('a failing listener of the stored event', async () => {
    const off = h.hub.on('CacheStored', () => {
      throw new Error('listener bug (test)');
    });
    try {
      const { res, line } = await lineOf(logs, 'cache event listener failed', () => h.storeRaw(h.envelope(r.did), { 'x-request-id': 'store-listener' }));
      assert.equal(res.status, 202, res.text);
      assert.equal(line.reqId, 'store-listener');
    } finally {
      off();
    }
  });

  it('the Directory lookup warning of a store and of every retrieval', async () => {
    const stored = await h.storeRaw(h.envelope(r.did));
    assert.equal(stored.status, 202, stored.text);
    const id = stored.body.message_id as string;
    const path = enc(r.did);
    const requests: [string, (headers: Record<string, string>) => Promise<Reply>, string][] = [
      ['store', (x) => h.storeRaw(h.envelope(r.did), x), 'policy_lookup_failed'],
      ['messages', (x) => h.get(`/cache/messages/${path}`, { ...h.proof(r, 'pull', '*'), ...x }), 'ledger_unavailable'],
      ['summary', (x) => h.get(`/cache/summary/${path}`, { ...h.proof(r, 'summary', '*'), ...x }), 'ledger_unavailable'],
      ['chunks', (x) => h.get(`/cache/chunks/${path}/group-1`, { ...h.proof(r, 'chunks', 'group-1'), ...x }), 'ledger_unavailable'],
      ['message', (x) => h.get(`/cache/message/${path}/${id}`, { ...h.proof(r, 'pull_message', id), ...x }), 'ledger_unavailable'],
      ['ack', (x) => h.post('/cache/ack', ackBody(h.proof(r, 'ack', id), r.did, [id]), x), 'ledger_unavailable'],
    ];
    h.port.broken = true;
    try {
      for (const [name, send, code] of requests) {
        const { res, line } = await lineOf(logs, 'directory lookup failed', () => send({ 'x-request-id': `lookup-${name}` }));
        expectError(res, 503, code);
        assert.equal(line.reqId, `lookup-${name}`, name);
        assert.equal(line.level, 40, 'a warning');
      }
      const { res, line } = await lineOf(logs, 'directory lookup failed', () => requests[1]![1]({}));
      expectError(res, 503, 'ledger_unavailable');
      assert.match(String(line.reqId), MADE_UP_ID);
      assert.equal(line.reqId, res.headers['x-request-id']);
    } finally {
      h.port.broken = false;
    }
  });
});
