/** Wire shapes of the Directory's history and export routes (docs/explorer.md, docs/mirrors.md) as TypeBox schemas. */
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
  timestamp: Type.Integer({ description: "the block's time, Unix ms" }),
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
