/**
 * Ed25519 verifications off the event loop, on one verifier thread (`verify-worker.ts`): the signatures asked for
 * during one event-loop turn go to the thread as one message and come back as one. node:crypto's callback form
 * queues a libuv pool job per signature, and each job's wake-up of a pool thread cost the event loop more than
 * the rest of a retrieval's work there; a batch costs one wake-up, whatever its size.
 *
 * The verdict is {@link verifyAnyEd25519}'s. A thread that dies is replaced for the next batch, and what it held
 * is verified on the pool instead; more than {@link MAX_THREAD_DEATHS} deaths within {@link DEATH_WINDOW_MS}
 * leave every later verification on the pool, so a thread that cannot start is not started forever.
 *
 * Signatures waiting for a verdict are bounded ({@link MAX_PENDING_SIGNATURES}, as the mailbox writer bounds its
 * queue): beyond it a request is refused with 429 `rate_limited` rather than held in memory behind the others.
 */
import type { Worker } from 'node:worker_threads';
import { DdnError } from '../base/errors.js';
import { startModuleWorker } from '../base/module-worker.js';
import { ThreadDeaths } from '../base/thread-deaths.js';
import { verifyAnyEd25519Async } from './ed25519.js';
import { MAX_BATCH_TEXTS, packBatch, type VerifyBatchReply, type VerifyItem } from './verify-batch.js';

export const MAX_THREAD_DEATHS = 5;
export const DEATH_WINDOW_MS = 60_000;
/** Signatures waiting for a verdict (queued, on the thread or on the pool) beyond which new ones are refused. */
export const MAX_PENDING_SIGNATURES = 10_000;

/** Hears of a verifier thread's death: why it ended, and whether a new thread takes the next batch. */
export type VerifierDeathListener = (err: unknown, restarted: boolean) => void;

interface Waiting extends VerifyItem {
  resolve(ok: boolean): void;
}

export class VerifierThread {
  private worker: Worker | null = null;
  private queue: Waiting[] = [];
  private readonly sent = new Map<number, Waiting[]>();
  private nextId = 0;
  private scheduled = false;
  private readonly deaths = new ThreadDeaths(MAX_THREAD_DEATHS, DEATH_WINDOW_MS);
  private onPool = false;
  private startedNow = 0;
  private waiting = 0;

  /** `start` makes a new verifier thread (tests pass one that fails). */
  constructor(
    private readonly start: () => Worker = () => startModuleWorker(import.meta.url, 'verify-worker', null),
    private readonly maxPending = MAX_PENDING_SIGNATURES,
  ) {}

  /** Signatures waiting for a verdict now. */
  get pending(): number {
    return this.waiting;
  }

  /** Threads started so far (the first one included). */
  get started(): number {
    return this.startedNow;
  }

  /** Batches sent to a thread so far. */
  get batches(): number {
    return this.nextId;
  }

  /** Whether verifications have moved to the pool for good, after too many thread deaths. */
  get fellBackToPool(): boolean {
    return this.onPool;
  }

  /**
   * Told when a thread dies, as a SQLite writer tells of its thread's death: why (the thread's error, else its exit
   * code), and whether a new thread takes over (false: verifications stay on the pool from now on).
   */
  onThreadExit: VerifierDeathListener | undefined;

  /** Starts the thread now rather than on the first batch (its memory is then part of the idle process). */
  warm(): void {
    if (!this.onPool) this.thread();
  }

  /**
   * True iff `signature` verifies over one of `texts` by `publicKey`. Rejects with 429 `rate_limited` while
   * `maxPending` signatures are waiting.
   */
  verify(publicKey: Uint8Array, texts: readonly Uint8Array[], signature: Uint8Array): Promise<boolean> {
    if (publicKey.length !== 32 || signature.length !== 64 || texts.length === 0) return Promise.resolve(false);
    if (this.waiting >= this.maxPending) {
      return Promise.reject(new DdnError('rate_limited', 'too many signatures are waiting for verification', { retry_after_seconds: 1 }));
    }
    this.waiting++;
    const answered = (ok: boolean) => {
      this.waiting--;
      return ok;
    };
    if (this.onPool || texts.length > MAX_BATCH_TEXTS) return verifyAnyEd25519Async(publicKey, texts, signature).then(answered);
    return new Promise((resolve) => {
      this.queue.push({ publicKey, texts, signature, resolve: (ok) => resolve(answered(ok)) });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.flush());
    });
  }

  /** Stops the current thread (a later batch starts another); what it held is verified on the pool. */
  async close(): Promise<void> {
    const worker = this.worker;
    if (worker === null) return;
    this.worker = null;
    this.handToPool();
    await worker.terminate();
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (this.onPool) {
      verifyOnPool(batch);
      return;
    }
    const id = this.nextId++;
    this.sent.set(id, batch);
    const packed = packBatch(batch);
    const worker = this.thread();
    if (this.sent.size === 1) worker.ref();
    worker.postMessage({ id, packed }, [packed]);
  }

  private thread(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = this.start();
    this.startedNow++;
    worker.on('message', (m: VerifyBatchReply) => this.onReply(worker, m));
    // the thread's end is what counts; its error is not the verdict of any signature, only the reason it ended
    let cause: unknown;
    worker.on('error', (err) => {
      cause = err;
    });
    worker.once('exit', (code) => this.onExit(worker, cause ?? new Error(`the verifier thread exited with code ${code}`)));
    // an idle thread never keeps the process alive; a batch in flight does (after the listeners: adding a
    // 'message' listener refs the thread again)
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private onReply(worker: Worker, m: VerifyBatchReply): void {
    const batch = this.sent.get(m.id);
    if (batch === undefined) return;
    this.sent.delete(m.id);
    if (this.sent.size === 0) worker.unref();
    const verdicts = new Uint8Array(m.verdicts);
    for (let i = 0; i < batch.length; i++) batch[i].resolve(verdicts[i] === 1);
  }

  private onExit(worker: Worker, cause: unknown): void {
    if (this.worker !== worker) return;
    this.worker = null;
    if (!this.deaths.record(Date.now())) this.onPool = true;
    this.onThreadExit?.(cause, !this.onPool);
    this.handToPool();
  }

  /** What the current thread was sent and has not answered, verified on the pool instead. */
  private handToPool(): void {
    const held = [...this.sent.values()].flat();
    this.sent.clear();
    verifyOnPool(held);
  }
}

function verifyOnPool(items: readonly Waiting[]): void {
  for (const it of items) void verifyAnyEd25519Async(it.publicKey, it.texts, it.signature).then(it.resolve);
}

const shared = new VerifierThread();

/** Starts the process's verifier thread; `onThreadExit` hears of its deaths. */
export function startVerifierThread(onThreadExit?: VerifierDeathListener): void {
  shared.onThreadExit = onThreadExit;
  shared.warm();
}

/** Signatures waiting for a verdict on the process's verifier thread (or on the pool after it), now (metrics). */
export function verifierPending(): number {
  return shared.pending;
}

/** {@link VerifierThread.verify} on the process's one verifier thread. */
export function verifyOnThread(publicKey: Uint8Array, texts: readonly Uint8Array[], signature: Uint8Array): Promise<boolean> {
  return shared.verify(publicKey, texts, signature);
}
