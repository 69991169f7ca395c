/**
 * A resumed send reports its progress from where it resumed (issue 42 item 5): `sendFile` with `skip` tells
 * `onProgress` first at the envelopes already staged, never once per envelope of the earlier run.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { DirectoryClient } from '../../src/client/directory-client.js';
import { sendFile, type SendProgress } from '../../src/client/file-sender.js';
import { DirectoryApiError } from '../../src/client/http.js';
import type { RelayClient } from '../../src/client/relay-client.js';
import { sha256 } from '../../src/crypto/hash.js';
import { PLATFORM } from '../../src/protocol/profile.js';

const data = new Uint8Array(10 * 10_000).map((_, i) => i & 0xff);
const limits = { max_http_envelope_bytes: 100_000, max_unchunked_message_bytes: 20_000, max_chunk_bytes: 20_000 };

/** A plaintext send (no key agreement to resolve) of `data` in 10 000-byte chunks through a Relay that stages all. */
async function progressOf(skip: number): Promise<SendProgress[]> {
  const seen: SendProgress[] = [];
  const directory = {
    deliveryResolution: () => Promise.reject(new DirectoryApiError(404, 'key_agreement_not_found', 'none', {})),
  } as unknown as DirectoryClient;
  let posted = 0;
  const relay = {
    limits: () => Promise.resolve(limits),
    post: () => {
      posted++;
      return Promise.resolve({
        result: { success: true, code: posted === 10 - skip ? 'chunk_set_delivered' : 'chunk_staged', delivery_mode: 'relay' },
        attempts: 1,
      });
    },
  } as unknown as RelayClient;
  await sendFile({
    profile: PLATFORM,
    directory,
    relay,
    to: 'did:platform:8DfbjXLth7APvt3qQPgtf',
    plaintext: true,
    partBytes: 10_000,
    skip,
    source: { name: 'f.bin', size: data.length, sha256: sha256(data), read: (o, n) => Promise.resolve(data.subarray(o, o + n)) },
    onProgress: (p) => seen.push(p),
  });
  return seen;
}

describe('progress of a resumed send', () => {
  it('starts at the envelopes staged before, then one step per envelope sent', async () => {
    const resumed = await progressOf(4);
    assert.deepEqual(
      resumed.map((p) => [p.sentEnvelopes, p.sentBytes]),
      [
        [4, 40_000],
        [5, 50_000],
        [6, 60_000],
        [7, 70_000],
        [8, 80_000],
        [9, 90_000],
        [10, 100_000],
      ],
    );
    assert.equal((await progressOf(0))[0]!.sentEnvelopes, 1, 'a fresh send starts at the first envelope');
  });
});
