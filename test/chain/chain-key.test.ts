import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ChainKeyError, createChainKeyFile, loadChainKey } from '../../src/chain/chain-key.js';

const dir = mkdtempSync(join(tmpdir(), 'ddn-chain-key-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = (text: string, mode = 0o600): string => {
  const p = join(dir, `k${n++}.json`);
  writeFileSync(p, text, { mode });
  chmodSync(p, mode);
  return p;
};
const refused = async (path: string, pattern: RegExp, secret?: string): Promise<void> => {
  const err = await loadChainKey(path).then(
    () => assert.fail('loaded'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ChainKeyError, String(err));
  assert.match(err.message, pattern);
  if (secret !== undefined) assert.ok(!err.message.includes(secret.slice(2)), 'the secret appears in the message');
};

describe('the chain key file', () => {
  it('is written with mode 0600 as {type, secret, address} and loads back to the same account', async () => {
    const path = join(dir, 'fresh.json');
    const key = await createChainKeyFile(path);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    const json = JSON.parse(readFileSync(path, 'utf8')) as Record<string, string>;
    assert.deepEqual(Object.keys(json).sort(), ['address', 'secret', 'type']);
    assert.equal(json.type, 'sr25519');
    assert.match(json.secret!, /^0x[0-9a-f]{64}$/);
    assert.equal(json.address, key.address);
    assert.match(key.address, /^5/);
    const loaded = await loadChainKey(path);
    assert.equal(loaded.address, key.address);
    assert.deepEqual(loaded.pair.publicKey, key.pair.publicKey);
  });

  it('is never overwritten', async () => {
    const path = join(dir, 'once.json');
    await createChainKeyFile(path);
    await assert.rejects(createChainKeyFile(path), /EEXIST/);
  });

  it('is refused when group or others may read it, naming the fix', async () => {
    const path = join(dir, 'open.json');
    const key = await createChainKeyFile(path);
    chmodSync(path, 0o644);
    await refused(path, /may be read by others \(mode 644\); run chmod 600/);
    chmodSync(path, 0o600);
    assert.equal((await loadChainKey(path)).address, key.address);
  });

  it('is refused when malformed, without echoing the secret', async () => {
    const secret = `0x${'ab'.repeat(32)}`;
    await refused(join(dir, 'missing.json'), /cannot read the chain key .*ENOENT/);
    await refused(file('not json'), /is not JSON/);
    await refused(file('[1]'), /is not a JSON object/);
    await refused(file(JSON.stringify({ type: 'ed25519', secret, address: 'x' })), /"type" must be "sr25519"/, secret);
    await refused(file(JSON.stringify({ type: 'sr25519', secret: '0x1234', address: 'x' })), /"secret" must be a 32-byte seed/);
    await refused(file(JSON.stringify({ type: 'sr25519', secret })), /"address" must be an SS58 address/, secret);
    const other = await createChainKeyFile(join(dir, 'other.json'));
    await refused(file(JSON.stringify({ type: 'sr25519', secret, address: other.address })), /is not the secret's account/, secret);
    await refused(file(JSON.stringify({ type: 'sr25519', secret, address: 'not-an-address' })), /is not the secret's account/, secret);
  });
});
