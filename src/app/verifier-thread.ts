/**
 * The process's Ed25519 verifier thread (`src/crypto/verify-thread.ts`) as a node runs it: its queue a gauge, its
 * deaths logged as a SQLite writer's are (pino, `err` and `restarted`). A role that verifies on the thread wires it
 * here, so that each one reports it the same way. Today that is the Cache alone (retrieval proofs): a Directory,
 * a Relay and a mirror verify on their event loop and start no verifier thread.
 */
import type { Logger } from 'pino';
import { startVerifierThread, verifierPending, type VerifierDeathListener } from '../crypto/verify-thread.js';
import type { NodeMetrics } from './metrics.js';

/** Logs a verifier thread's death: error level, the thread's error, whether a new thread took over. */
export function verifierDeathLogger(logger: Logger | undefined): VerifierDeathListener {
  return (err, restarted) =>
    logger?.error(
      { err, restarted },
      restarted ? 'verifier thread died; a new one takes over' : 'verifier thread keeps dying; signatures are verified on the thread pool from now on',
    );
}

/** `ddn_verifier_pending_signatures`, read at scrape time. */
export function watchVerifier(m: NodeMetrics): void {
  m.gauge('ddn_verifier_pending_signatures', 'Signatures waiting for a verdict on the verifier thread (or on the thread pool after it)', (g) =>
    g.set(verifierPending()),
  );
}

/** Starts the process's verifier thread now (its memory is then part of the idle process), its deaths logged. */
export function startNodeVerifier(logger: Logger | undefined): void {
  startVerifierThread(verifierDeathLogger(logger));
}
