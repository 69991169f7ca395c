/** Size limits of `POST /cache/store` (http-api.md §0.3, §10.1, §11.1 steps 1, 3, 8) at their boundaries. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { expectError, startCache, type CacheHarness, type Recipient } from './harness.js';

const MAX_BODY = 26_214_400;
type Body = Record<string, unknown>;

/** `env` serialised, with `payload.pad` sized so the text is exactly `bytes` long. */
function sized(env: Body, bytes: number): string {
  const base = JSON.stringify({ ...env, payload: { ...(env.payload as Body), pad: '' } });
  const pad = bytes - Buffer.byteLength(base);
  assert.ok(pad >= 0);
  return JSON.stringify({ ...env, payload: { ...(env.payload as Body), pad: 'x'.repeat(pad) } });
}

describe('store size limits', () => {
  let h: CacheHarness;
  let r: Recipient;
  before(async () => {
    h = await startCache();
    r = await h.registerRecipient(51);
  });
  after(() => h.close());

  it('accepts a body of exactly 25 MiB and refuses one byte more (413 envelope_too_large, before parsing)', async () => {
    const exact = sized(h.envelope(r.did), MAX_BODY);
    assert.equal(Buffer.byteLength(exact), MAX_BODY);
    const ok = await h.storeRaw(exact);
    assert.equal(ok.status, 202, ok.text.slice(0, 500));
    const over = sized(h.envelope(r.did), MAX_BODY + 1);
    expectError(await h.storeRaw(over), 413, 'envelope_too_large');
    // not even parsed: invalid JSON of that size is still 413
    expectError(await h.storeRaw(`{${'x'.repeat(MAX_BODY)}`), 413, 'envelope_too_large');
    // the 25 MiB envelope comes back intact
    const id = JSON.parse(exact).message_id as string;
    const got = await h.get(`/cache/message/${encodeURIComponent(r.did)}/${id}`, h.proof(r, 'pull_message', id));
    assert.equal(got.status, 200);
    const env = (got.body.message as Body).envelope as Body;
    assert.equal(((env.payload as Body).pad as string).length, (JSON.parse(exact).payload.pad as string).length);
  });

  it('applies the effective max_http_envelope_bytes and payload limits (413 payload_too_large)', async () => {
    h.port.constraints = { maxHttpEnvelopeBytes: 1_000 };
    try {
      assert.equal((await h.storeRaw(sized(h.envelope(r.did), 1_000))).status, 202);
      expectError(await h.storeRaw(sized(h.envelope(r.did), 1_001)), 413, 'payload_too_large');
    } finally {
      h.port.constraints = {};
    }
    // network default max_unchunked_message_bytes = 16 MiB of decoded ciphertext
    const b64 = (n: number) => Buffer.alloc(n, 1).toString('base64');
    expectError(await h.storeRaw(h.envelope(r.did, { payload: { ciphertext_b64: b64(16_777_217) } })), 413, 'payload_too_large');
    assert.equal((await h.storeRaw(h.envelope(r.did, { payload: { ciphertext_b64: b64(16_777_216) } }))).status, 202);
  });

  it('refuses metadata above 64 KiB (413 metadata_too_large)', async () => {
    const withContext = (n: number) => {
      const env = h.envelope(r.did, { context: { note: '' } });
      const { payload, ...meta } = env;
      void payload;
      const pad = n - Buffer.byteLength(JSON.stringify(meta));
      return h.envelope(r.did, { message_id: env.message_id, timestamp: env.timestamp, context: { note: 'y'.repeat(pad) } });
    };
    assert.equal((await h.storeRaw(withContext(65_536))).status, 202);
    expectError(await h.storeRaw(withContext(65_537)), 413, 'metadata_too_large');
  });
});
