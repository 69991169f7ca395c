/**
 * A signature is verified once in a process (src/ledger/runtime/verified-signatures.ts): admission records every
 * signature it found valid in the pool entry — a persona's attestation too — and the block that includes the entry
 * decides with that record, so it verifies none of them again. An entry that did not pass admission in this process
 * (a pending row read back at a start, a call ordered by a chain) has an empty record: its signatures are verified,
 * and a forged one is refused.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { to0x } from '../../src/base/bytes.js';
import { executeBlock } from '../../src/ledger/block-execution.js';
import { blockHash, genesisHeader } from '../../src/ledger/block.js';
import { Executor } from '../../src/ledger/executor.js';
import { encodeExtrinsic, txHashOf, type Call } from '../../src/ledger/extrinsic.js';
import { VerifiedSignatures } from '../../src/ledger/runtime/verified-signatures.js';
import type { PoolEntry } from '../../src/ledger/types.js';
import { PLATFORM } from '../../src/protocol/profile.js';
import { openSqlite } from '../../src/store/sqlite/database.js';
import { didOf, genesisConfig, Harness, metaOf, patchCall, registerCall, rootSigner, seedKey, serviceOf } from './harness.js';
import { actor, personaCall, register, registerOp } from './policy-harness.js';

const key = seedKey(33);
const A = didOf(801);
/** 64 bytes that are no signature of anything. */
const FORGED = new Uint8Array(64).fill(7);

/** A's document change, signed with `signature` when given (else validly). */
const change = (signature?: Uint8Array) =>
  patchCall('add_service', A, serviceOf(A, 's'), rootSigner(key), signature ? { nonce: 0n, signature } : { nonce: 0n });

function signedPayloadOf(call: Call): Uint8Array {
  return (call.args as { signedPayload: Uint8Array }).signedPayload;
}

function entryOf(call: Call, verified: VerifiedSignatures): PoolEntry {
  const bytes = encodeExtrinsic(call);
  const txHash = to0x(txHashOf(bytes));
  return { tx: { txHash, extrinsic: call.name, status: 'pending', submittedAtMs: 0, meta: metaOf(call) }, call, bytes, verified };
}

describe('signatures verified once', () => {
  it("records at admission every signature it verified, a persona's attestation too, and the block finds them all there", (t) => {
    const h = new Harness();
    t.after(() => h.close());
    h.apply(registerCall(A, key));
    const op = actor(7);
    register(h, op);
    h.submit(change());
    h.submit(personaCall(h, op, registerOp(h, 'example.com', op, { controllers: ['root'] })));
    const [doc, persona] = h.ledger.pendingEntries();
    assert.equal(doc!.verified.size, 1, "the change's signature");
    assert.equal(persona!.verified.size, 2, "the operator's signature and the attestor's");
    const block = h.produce();
    for (const e of [doc!, persona!]) assert.equal(h.ledger.txView(e.tx.txHash)?.tx.blockNumber, block.number);
    // a question the record could not answer would have been verified and added to it
    assert.equal(doc!.verified.size, 1);
    assert.equal(persona!.verified.size, 2);
  });

  it("decides a block's signatures with each entry's record: what it holds passes unverified, the rest is verified", (t) => {
    const h = new Harness();
    t.after(() => h.close());
    h.apply(registerCall(A, key));
    const genesis = genesisConfig();
    const exec = new Executor(PLATFORM, genesis, blockHash(genesisHeader(genesis)), undefined, 10);
    const forged = change(FORGED);
    const digest = createHash('sha256').update(key.publicKey).update(FORGED).update(signedPayloadOf(forged)).digest();
    const run = (verified: VerifiedSignatures) =>
      executeBlock(exec, h.ledger.headRef(), h.ledger.finalizedView(), [entryOf(forged, verified)], h.clock.nowMs());
    const vouched = run(VerifiedSignatures.vouchedFor(new Uint8Array(digest))).records[0]!;
    assert.equal(vouched.status, 'included', 'the record decides: the block does not verify what it holds');
    const unvouched = run(new VerifiedSignatures()).records[0]!;
    assert.equal(unvouched.status, 'failed');
    assert.equal(unvouched.error?.name, 'InvalidSignature');
  });

  it('refuses a forged entry that did not pass admission here: a pending row read back at a start', (t) => {
    const h = new Harness();
    t.after(() => h.close());
    h.apply(registerCall(A, key));
    const services = h.record(A)!.document!.service!.length;
    const forged = change(FORGED);
    assert.throws(() => h.ledger.submit(forged, metaOf(forged)), /InvalidSignature/);
    // the row appears in the store without this process's admission (written by another hand, or a version
    // before a bug was fixed): a start reads it back with an empty record
    h.ledger.stop();
    const entry = entryOf(forged, new VerifiedSignatures());
    const db = openSqlite(h.path, [], 'ledger');
    db.prepare('INSERT INTO ledger_pending (tx_hash, extrinsic, subject, submitted_at_ms, meta, bytes) VALUES (?, ?, ?, ?, ?, ?)').run(
      entry.tx.txHash,
      entry.tx.extrinsic,
      A,
      h.clock.nowMs(),
      JSON.stringify(entry.tx.meta),
      Buffer.from(entry.bytes),
    );
    db.close();
    const ledger = h.reopen();
    assert.deepEqual(ledger.pendingEntries(), [], 'not in the pool');
    const v = ledger.txView(entry.tx.txHash);
    assert.equal(v?.status, 'failed');
    assert.equal(v?.tx.error?.name, 'InvalidSignature');
    assert.equal(h.record(A)!.document!.service!.length, services, 'the change did not happen');
    // the valid change is admitted and included as usual
    h.apply(change());
    assert.equal(h.record(A)!.document!.service!.length, services + 1);
  });
});
