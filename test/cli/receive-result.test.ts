import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ReceivedFile, ReceiveFailure } from '../../src/client/file-receiver.js';
import { ReceiveTally, REPORTED_ERRORS, REPORTED_FILES } from '../../src/cli/receive-result.js';

function file(n: number): ReceivedFile {
  const id = `m${n}`;
  return {
    path: `/out/${id}.bin`,
    name: `${id}.bin`,
    media_type: 'application/octet-stream',
    size_bytes: n,
    sha256: 'ab',
    message_ids: [id],
    sender: null,
    source: 'cache',
    acknowledged: [],
  };
}

function failure(n: number): ReceiveFailure {
  return { code: 'cache_unavailable', message: `attempt ${n}`, endpoint: 'http://cache.test' };
}

describe('ReceiveTally (what a --follow session reports at its end)', () => {
  it('counts every file written but lists only the latest ones', () => {
    const t = new ReceiveTally('did:ddn:x');
    const total = REPORTED_FILES + 500;
    for (let n = 0; n < total; n += 100) t.add({ files: Array.from({ length: 100 }, (_, k) => file(n + k)), errors: [], caches: [] });
    assert.equal(t.result.received, total);
    assert.equal(t.result.files.length, REPORTED_FILES);
    assert.equal(t.result.files[0]!.name, `m${total - REPORTED_FILES}.bin`);
    assert.equal(t.result.files.at(-1)!.name, `m${total - 1}.bin`);
  });

  it('lists an error every sweep repeats once, and at most REPORTED_ERRORS distinct ones', () => {
    const t = new ReceiveTally('did:ddn:x');
    for (let sweep = 0; sweep < 3; sweep++) t.add({ files: [], errors: [failure(0), failure(0)], caches: [] });
    assert.deepEqual(t.result.errors, [failure(0)]);
    for (let n = 1; n < REPORTED_ERRORS * 2; n++) t.add({ files: [], errors: [failure(n)], caches: [] });
    assert.equal(t.result.errors.length, REPORTED_ERRORS);
    assert.deepEqual(t.result.errors.at(-1), failure(REPORTED_ERRORS - 1));
  });

  it('keeps the suspended files a later report did not finish, and the latest caches', () => {
    const t = new ReceiveTally('did:ddn:x');
    const part = (key: string) => ({ message_key: key, name: `${key}.bin`, received_bytes: 1, total_bytes: 2 });
    t.add({ files: [], errors: [], caches: [{ endpoint: 'a', service_id: '#c', pending: 2 }], suspended: [part('m1'), part('m2')] });
    t.add({ files: [file(1)], errors: [], caches: [] });
    assert.deepEqual(t.result.suspended, [part('m2')]);
    assert.deepEqual(t.result.caches, [{ endpoint: 'a', service_id: '#c', pending: 2 }]);
    t.add({ files: [file(2)], errors: [], caches: [{ endpoint: 'a', service_id: '#c', pending: 0 }] });
    assert.equal(t.result.suspended, undefined);
    assert.equal(t.result.caches[0]!.pending, 0);
  });
});
