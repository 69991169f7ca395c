/**
 * What a Directory process's hand-over of writes (src/http/hand-over.ts) asks of its deployment: who produces the
 * blocks now, and the deployment's shared token. A ledger on PostgreSQL keeps both (src/store/postgres/ledger-sync.ts).
 */

/** Where this process's writes go now. */
export interface HandOverPeer {
  /** The producer's origin (`http://host:port`); the request's path is appended. */
  readonly url: string;
}

/** What the HTTP layer asks of the deployment (src/store/postgres/ledger-sync.ts keeps it). */
export interface HandOverSource {
  /** The process to hand writes to now; undefined: this process admits them (it produces, or none is known). */
  peer(): HandOverPeer | undefined;
  /** The deployment's shared secret; undefined until it is known (then nothing is handed or recognised). */
  token(): string | undefined;
  /** A hand-over to `peer` failed: it is not tried again for a while. */
  failed(peer: HandOverPeer): void;
  /** A hand-over to `peer` was answered (reads through this process then copy what the producer took). */
  answered(peer: HandOverPeer): void;
}
