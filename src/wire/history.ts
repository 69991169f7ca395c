/**
 * Wire shapes of the Directory's history and export routes (docs/explorer.md, docs/mirrors.md) and of the
 * routes every role serves (`GET /health` §3.7, `GET /ready`) as TypeBox schemas.
 */
import { Type, type Static } from 'typebox';
import { JsonObjectSchema } from './json-forms.js';

/** `?cursor=&limit=` of the history routes. */
export const HistoryQuerySchema = Type.Object({
  cursor: Type.Optional(Type.String({ description: 'the `next_cursor` of the previous page' })),
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: '1–100, default 20' })),
});

/** One finalized operation of a history page, newest first. */
export const HistoryEntrySchema = Type.Object({
  block_number: Type.Integer(),
  block_hash: Type.String(),
  block_index: Type.Integer(),
  tx_hash: Type.String(),
  timestamp: Type.Integer({ description: 'the block\'s time, Unix ms' }),
  timestamp_iso: Type.String(),
  action: Type.String({ description: 'the Directory action that submitted it' }),
  extrinsic: Type.String({ description: 'the ledger call' }),
  signer_key_id: Type.Union([Type.String(), Type.Null()]),
  changes: Type.Union([JsonObjectSchema, Type.Null()]),
});
export type HistoryEntryJson = Static<typeof HistoryEntrySchema>;

const page = { history: Type.Array(HistoryEntrySchema), next_cursor: Type.Union([Type.String(), Type.Null()]) };

/** `GET /dids/{did}/history` 200. */
export const DidHistorySchema = Type.Object({ did: Type.String(), ...page }, { title: 'DidHistory' });
export type DidHistoryResponse = Static<typeof DidHistorySchema>;
/** `GET /personas/{persona}/history` 200. */
export const PersonaHistorySchema = Type.Object({ persona: Type.String(), ...page }, { title: 'PersonaHistory' });
export type PersonaHistoryResponse = Static<typeof PersonaHistorySchema>;
/** `GET /applications/{application_id}/history` 200. */
export const ApplicationHistorySchema = Type.Object({ application_id: Type.String(), ...page }, { title: 'ApplicationHistory' });
export type ApplicationHistoryResponse = Static<typeof ApplicationHistorySchema>;

/** `?after=&count=` of `GET /export`. */
export const ExportQuerySchema = Type.Object({
  after: Type.Optional(Type.String({ pattern: '^[0-9]+$', description: 'the last seq the follower holds (default 0)' })),
  count: Type.Optional(Type.String({ pattern: '^[0-9]+$', description: 'entries per page' })),
});

/** `GET /export/genesis` 200: what a mirror needs to start its own chain. */
export const GenesisSchema = Type.Object(
  {
    chain_id: Type.String(),
    profile: Type.String(),
    genesis_time_ms: Type.Integer(),
    persona_attestors: Type.Array(Type.String({ description: 'hex Ed25519 public key' })),
    genesis_hash: Type.String(),
  },
  { title: 'Genesis' },
);
export type GenesisResponse = Static<typeof GenesisSchema>;

/** `GET /mirror/status` 200 (a mirror). */
export const MirrorStatusSchema = Type.Object(
  {
    primary_url: Type.String(),
    seq: Type.Integer({ description: 'the last feed entry held' }),
    block: Type.Integer({ description: 'the head block' }),
    connected: Type.Boolean(),
    error: Type.Optional(Type.String({ description: 'why following stopped' })),
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
    events: Type.Optional(
      Type.Object(
        { dropped: Type.Object({ queue_full: Type.Integer(), owner_budget: Type.Integer(), step_cap: Type.Integer(), send_not_consented: Type.Integer() }) },
        { description: 'a node running the Relay or the Cache: events and steps dropped since start, by kind' },
      ),
    ),
  },
  { title: 'Health' },
);
export type HealthResponse = Static<typeof HealthSchema>;

/** `GET /ready` 200. */
export const ReadySchema = Type.Object(
  { status: Type.Literal('ready'), checks: Type.Record(Type.String(), Type.Literal('ok')) },
  { title: 'Ready' },
);
export type ReadyResponse = Static<typeof ReadySchema>;
