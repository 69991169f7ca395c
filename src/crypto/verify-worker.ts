/**
 * The Ed25519 verifier thread (`verify-thread.ts` is its owner): each message is one batch of signatures, packed
 * by {@link packBatch}; the answer is one verdict byte per signature (1 = verifies over one of its texts).
 */
import { nameThisThread } from '../base/module-worker.js';
import { parentPort } from 'node:worker_threads';
import { verifyAnyEd25519 } from './ed25519.js';
import { unpackBatch, type VerifyBatchReply, type VerifyBatchRequest } from './verify-batch.js';

const port = parentPort;
if (port === null) throw new Error('verify-worker runs as a worker thread');
nameThisThread('ddn-verify');
port.on('message', (m: VerifyBatchRequest) => {
  const items = unpackBatch(new Uint8Array(m.packed));
  const buffer = new ArrayBuffer(items.length);
  const verdicts = new Uint8Array(buffer);
  for (let i = 0; i < items.length; i++) {
    const it = items[i];
    verdicts[i] = verifyAnyEd25519(it.publicKey, it.texts, it.signature) ? 1 : 0;
  }
  const reply: VerifyBatchReply = { id: m.id, verdicts: buffer };
  port.postMessage(reply, [buffer]);
});
