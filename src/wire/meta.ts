/**
 * Wire shapes of the routes every role serves (`GET /health` http-api.md §3.7, `GET /ready`) and of a mirror's
 * `GET /mirror/status`, as TypeBox schemas.
 */
import { Type, type Static } from 'typebox';

/** `GET /mirror/status` 200 (a mirror). */
export const MirrorStatusSchema = Type.Object(
  {
    primary_url: Type.String(),
    seq: Type.Integer({ description: 'the last feed entry held' }),
    block: Type.Integer({ description: 'the head block' }),
    connected: Type.Boolean(),
    error: Type.Optional(Type.String({ description: 'why following stopped: the first block that did not verify' })),
    last_connection_error: Type.Optional(
      Type.String({ description: 'why the last connection to the primary ended or could not be opened (it is retried); absent once one is open' }),
    ),
  },
  { title: 'MirrorStatus' },
);
export type MirrorStatusResponse = Static<typeof MirrorStatusSchema>;

const blockRef = Type.Object({ number: Type.Integer(), hash: Type.String() });

/** `GET /health` 200 (§3.7), every role. */
export const HealthSchema = Type.Object(
  {
    status: Type.Enum(['ok', 'degraded'], { description: '`degraded` while new data is refused for lack of storage' }),
    version: Type.Optional(Type.String()),
    commit: Type.Optional(Type.String()),
    roles: Type.Array(Type.String()),
    profile: Type.String(),
    chain_id: Type.String(),
    genesis_hash: Type.Optional(Type.String()),
    head: Type.Optional(blockRef),
    finalized: Type.Optional(blockRef),
    directory: Type.Optional(Type.Object({ url: Type.String(), reachable: Type.Boolean() }, { description: 'a Relay- or Cache-only process' })),
    chain: Type.Optional(
      Type.Object(
        {
          network_id: Type.String(),
          connected: Type.Boolean(),
          account: Type.String(),
          finalized: Type.Integer({ description: "the chain's newest finalized block seen (-1: none yet)" }),
          applied: Type.Integer({ description: 'the last chain block applied to the ledger' }),
          lag: Type.Integer({ description: 'finalized blocks not yet applied' }),
          awaiting: Type.Integer({ description: 'changes accepted here that the chain has not ordered yet' }),
        },
        { description: 'a Directory on `--ledger substrate` (docs/chain.md)' },
      ),
    ),
    events: Type.Optional(
      Type.Object(
        {
          dropped: Type.Object({
            queue_full: Type.Integer(),
            owner_budget: Type.Integer(),
            owner_queue_full: Type.Integer(),
            step_cap: Type.Integer(),
            send_not_consented: Type.Integer(),
          }),
        },
        { description: 'a node running the Relay or the Cache: events and steps dropped since start, by kind' },
      ),
    ),
  },
  { title: 'Health' },
);
export type HealthResponse = Static<typeof HealthSchema>;

/** `GET /ready` 200. */
export const ReadySchema = Type.Object({ status: Type.Literal('ready'), checks: Type.Record(Type.String(), Type.Literal('ok')) }, { title: 'Ready' });
export type ReadyResponse = Static<typeof ReadySchema>;
