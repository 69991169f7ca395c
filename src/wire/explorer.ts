/**
 * Wire shapes of the Directory's read routes for the web explorer (docs/explorer.md): the ledger's overview, a
 * search over every kind of name, and a subject's current delivery policy, whichever version it has.
 */
import { Type, type Static } from 'typebox';
import { HistoryEntrySchema } from './history.js';
import { JsonObjectSchema } from './json-forms.js';

/** What an operation is about: a DID, a persona or an application (null when the call does not say). */
export const SubjectKindSchema = Type.Union([Type.Enum(['did', 'persona', 'application']), Type.Null()]);
export type SubjectKind = Static<typeof SubjectKindSchema>;

/** `?limit=` of `GET /overview`. */
export const OverviewQuerySchema = Type.Object({
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: 'operations and blocks listed, 1–100, default 10' })),
});

const { block_number, block_index, tx_hash, timestamp, timestamp_iso, action, extrinsic } = HistoryEntrySchema.properties;

/** One finalized operation of the overview, newest first: a history entry's place and names, its outcome and subject. */
export const RecentOperationSchema = Type.Object({
  block_number,
  block_index,
  tx_hash,
  timestamp,
  timestamp_iso,
  action,
  extrinsic,
  success: Type.Boolean(),
  subject: Type.String({ description: 'the DID, persona or application id the operation is about' }),
  subject_kind: SubjectKindSchema,
});
export type RecentOperationJson = Static<typeof RecentOperationSchema>;

/** `GET /overview` 200: counts of the finalized state, the latest operations and blocks. */
export const OverviewSchema = Type.Object(
  {
    finalized_number: Type.Integer({ description: 'the counts and lists are as of this block' }),
    head_number: Type.Integer(),
    counts: Type.Object({
      dids: Type.Integer({ description: 'DIDs registered and not deleted' }),
      deleted_dids: Type.Integer(),
      personas: Type.Integer({ description: 'persona names ever registered (revoked and expired ones included)' }),
      applications: Type.Integer(),
      operations: Type.Integer({ description: 'finalized operations, failed ones included' }),
    }),
    recent_operations: Type.Array(RecentOperationSchema),
    recent_blocks: Type.Array(
      Type.Object({
        number: Type.Integer(),
        hash: Type.String(),
        timestamp: Type.Integer({ description: 'Unix ms' }),
        timestamp_iso: Type.String(),
        operations: Type.Integer(),
      }),
    ),
  },
  { title: 'Overview' },
);
export type OverviewResponse = Static<typeof OverviewSchema>;

/** `?q=` of `GET /search`. */
export const SearchQuerySchema = Type.Object({
  q: Type.String({ description: 'a DID, an alias, a persona, an application id, a transaction hash or a block number' }),
});

/** `GET /search` 200: every kind of record the query names (none is not an error). */
export const SearchSchema = Type.Object(
  {
    query: Type.String(),
    hits: Type.Array(
      Type.Object({
        kind: Type.Enum(['did', 'alias', 'persona', 'application', 'transaction', 'block']),
        id: Type.String({ description: 'what the explorer page of this kind takes: the DID for an alias' }),
        label: Type.String(),
      }),
    ),
  },
  { title: 'Search' },
);
export type SearchResponse = Static<typeof SearchSchema>;

/** `GET /policies/{scope}/{id}` 200: the subject's delivery policy, v3 else v2, or none. */
export const CurrentPolicySchema = Type.Object(
  {
    scope: Type.Enum(['did', 'persona', 'application']),
    id: Type.String(),
    version: Type.Union([Type.Literal(3), Type.Literal(2), Type.Null()], { description: 'null: the subject has no delivery policy' }),
    policy: Type.Union([JsonObjectSchema, Type.Null()]),
    block_number: Type.Integer(),
    block_hash: Type.String(),
  },
  { title: 'CurrentPolicy' },
);
export type CurrentPolicyResponse = Static<typeof CurrentPolicySchema>;
