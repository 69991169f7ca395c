/**
 * Staging bounds through `POST /relay` (docs/public-node.md, "Chunk staging at the Relay"): a set announcing far
 * more than the per-set cap is refused at its first chunk with 413 and nothing staged; one client's unsigned chunks
 * to many recipients stop at the per-sender bound (429 naming it) while another sender's are staged; a set that
 * stopped growing gives its room to a new one once the node is full and the idle bound has passed (injected clock).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { toBase64 } from '../../src/base/bytes.js';
import { senderSigningBytes } from '../../src/protocol/sender-signature.js';
import type { Recipient } from '../cache/harness.js';
import { expectFailure, expectSuccess, startRelay, type RelayHarness } from './harness.js';

type Body = Record<string, unknown>;

const PAYLOAD = Buffer.alloc(100 * 1024, 7).toString('base64');

describe('Relay: staging bounds', () => {
  let h: RelayHarness;
  const recipients: Recipient[] = [];
  before(async () => {
    h = await startRelay({
      settings: { stagingMaxSetBytes: 4 * 1024 * 1024, stagingMaxBytesPerSender: 400_000, stagingMaxBytes: 450_000, stagingIdleSeconds: 300 },
    });
    for (let i = 0; i < 4; i++) recipients.push(await h.registerRecipient(91 + i));
  });
  after(() => h.close());

  /** `env` signed by `who` (its root key), as a sender-signed envelope. */
  const signedBy = (who: Recipient, env: Body): Body => ({
    ...env,
    sender: who.did,
    sender_key_id: 'root',
    sender_signature: toBase64(who.key.sign(senderSigningBytes(h.profile, env))),
  });
  const chunk = (to: string, group: string, seq: number, total: number, over: Body = {}) =>
    h.envelope(to, {
      message_group_id: group,
      sequence_number: seq,
      total_chunks: total,
      message_id: randomUUID(),
      payload: { ciphertext_b64: PAYLOAD },
      ...over,
    });

  it('a set announcing 1,000 chunks of this size is refused at its first chunk with 413; nothing is staged', async () => {
    const res = await h.post(chunk(recipients[0]!.did, randomUUID(), 0, 1000));
    expectFailure(res, 413, 'payload_too_large');
    assert.equal((res.body.details as Body).limit, 'set_bytes');
    assert.deepEqual(await h.store.usage(), { sets: 0, bytes: 0 });
  });

  it("one sender's chunks to many recipients stop at its bound; another sender's are staged; an idle set gives its room", async () => {
    const groups: string[] = [];
    for (const r of recipients.slice(0, 2)) {
      const group = randomUUID();
      groups.push(group);
      expectSuccess(await h.post(chunk(r.did, group, 0, 2)), 'chunk_staged', 'staged');
    }
    const over = await h.post(chunk(recipients[2]!.did, randomUUID(), 0, 2));
    expectFailure(over, 429, 'staging_capacity_full');
    assert.equal((over.body.details as Body).limit, 'sender_bytes');
    assert.equal(over.headers['retry-after'], '30');
    // a sender-signed chunk counts against its DID, not the address that sent it
    const signer = recipients[3]!;
    const signed = await h.post(signedBy(signer, chunk(recipients[2]!.did, randomUUID(), 0, 2)));
    expectSuccess(signed, 'chunk_staged', 'staged');
    // three chunks of about 137 kB are staged: a fourth does not fit the node's 450,000 bytes; the idle sets give their room after 5 minutes, not an hour
    const late = chunk(signer.did, randomUUID(), 0, 2);
    h.clock.advance(299_000);
    expectFailure(await h.post(signedBy(recipients[2]!, late)), 429, 'staging_capacity_full');
    h.clock.advance(1_000);
    expectSuccess(await h.post(signedBy(recipients[2]!, late)), 'chunk_staged', 'staged');
    assert.deepEqual(await h.store.loadSet(recipients[0]!.did, groups[0]!), [], 'the longest idle set was dropped');
  });
});
