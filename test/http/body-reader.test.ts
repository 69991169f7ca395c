/** readRequestBody (src/http/body-reader.ts): limits, Content-Length framing and bodyless methods. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { BodyError, isValidMediaType, readRequestBody, TOO_LARGE_DRAIN_BYTES } from '../../src/http/body-reader.js';

function req(method: string, headers: Record<string, string>, chunks: string[]): IncomingMessage {
  return Object.assign(Readable.from(chunks.map((c) => Buffer.from(c))), { method, headers }) as unknown as IncomingMessage;
}

const limits = { limitBytes: 10, tooLargeCode: 'envelope_too_large' as const };
const JSON_CT = { 'content-type': 'application/json' };

async function failure(p: Promise<unknown>): Promise<BodyError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof BodyError) return e;
    throw e;
  }
  throw new Error('expected a BodyError');
}

describe('readRequestBody', () => {
  it('reads a Content-Length body from several chunks into one buffer', async () => {
    const body = await readRequestBody(req('POST', { ...JSON_CT, 'content-length': '7' }, ['{"a"', ':1}']), limits);
    assert.equal(body?.toString(), '{"a":1}');
  });

  it('reads a chunked body', async () => {
    const body = await readRequestBody(req('POST', { ...JSON_CT, 'transfer-encoding': 'chunked' }, ['{}', '']), limits);
    assert.equal(body?.toString(), '{}');
  });

  it('never reads the body of GET or HEAD', async () => {
    for (const m of ['GET', 'HEAD']) assert.equal(await readRequestBody(req(m, { ...JSON_CT, 'content-length': '2' }, ['{}']), limits), undefined);
  });

  it('a body without Content-Type and Content-Length is absent', async () => {
    assert.equal(await readRequestBody(req('POST', {}, []), limits), undefined);
  });

  it('too large by Content-Length or while reading → the role’s 413 code, connection closed', async () => {
    const declared = await failure(readRequestBody(req('POST', { ...JSON_CT, 'content-length': '11' }, []), limits));
    assert.equal(declared.error.code, 'envelope_too_large');
    assert.equal(declared.closeConnection, true);
    const streamed = await failure(readRequestBody(req('POST', { ...JSON_CT, 'transfer-encoding': 'chunked' }, ['123456', '789012']), limits));
    assert.equal(streamed.error.code, 'envelope_too_large');
  });

  it('a too-large body read to its end (drained, not kept) → 413 and the connection stays usable', async () => {
    const drained = await failure(readRequestBody(req('POST', { ...JSON_CT, 'content-length': '12' }, ['123456', '789012']), limits));
    assert.equal(drained.error.code, 'envelope_too_large');
    assert.equal(drained.closeConnection, false);
    const beyond = await failure(readRequestBody(req('POST', { ...JSON_CT, 'content-length': String(TOO_LARGE_DRAIN_BYTES + 1) }, []), limits));
    assert.equal(beyond.error.code, 'envelope_too_large');
    assert.equal(beyond.closeConnection, true);
  });

  it('a body that does not arrive within the timeout → 408 request_timeout, connection closed', async () => {
    const stalled = Object.assign(new Readable({ read() {} }), { method: 'POST', headers: { ...JSON_CT, 'content-length': '5' } });
    stalled.push(Buffer.from('{'));
    const e = await failure(readRequestBody(stalled as unknown as IncomingMessage, { ...limits, timeoutMs: 20 }));
    assert.equal(e.error.code, 'request_timeout');
    assert.equal(e.error.status, 408);
    assert.equal(e.closeConnection, true);
    stalled.destroy();
  });

  it('more or fewer bytes than Content-Length → 400 invalid_request', async () => {
    for (const chunks of [['12345'], ['1', '2']]) {
      const e = await failure(readRequestBody(req('POST', { ...JSON_CT, 'content-length': '3' }, chunks), limits));
      assert.equal(e.error.code, 'invalid_request');
      assert.equal(e.closeConnection, true);
    }
  });

  it('an invalid media type → 415', async () => {
    const e = await failure(readRequestBody(req('POST', { 'content-type': 'json', 'content-length': '2' }, ['{}']), limits));
    assert.equal(e.error.code, 'unsupported_media_type');
    assert.ok(isValidMediaType('application/json; charset=utf-8'));
    assert.ok(!isValidMediaType('application/'));
  });
});
