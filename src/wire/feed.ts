/**
 * The export feed's line (docs/mirrors.md) in TypeBox schemas: what `GET /export` sends one per line and
 * `GET /export/stream` one per WebSocket text frame, at the Directory and at a mirror alike (src/ledger/feed.ts
 * writes it). A line is its block's header with the block's extrinsic count, and — unless the block has no
 * extrinsics — one extrinsic with its outcome.
 */
import { Type, type Static } from 'typebox';

const HEX = '^0x[0-9a-f]*$';
const Hex = (description: string) => Type.String({ pattern: HEX, description });
const Count = Type.Integer({ minimum: 0 });

/** The block of a feed line: enough of its header to recompute its hash and check the parent link. */
export const FeedBlockSchema = Type.Object(
  {
    number: Count,
    hash: Hex('the block hash'),
    parent_hash: Hex("the parent block's hash"),
    timestamp: Type.Integer({ description: 'Unix ms' }),
    extrinsics_root: Hex('Merkle root of the extrinsics'),
    results_root: Hex('Merkle root of their outcomes'),
    extrinsic_count: Type.Integer({ minimum: 0, description: 'how many extrinsics the block holds (the lines sharing it)' }),
  },
  { additionalProperties: false, title: 'FeedBlock' },
);
export type FeedBlockJson = Static<typeof FeedBlockSchema>;

/** The line of a block without extrinsics: its seq and block only. */
export const FeedBlockLineSchema = Type.Object({ seq: Count, block: FeedBlockSchema }, { additionalProperties: false, title: 'FeedBlockLine' });

/** The line of one extrinsic of a block, with its outcome. */
export const FeedTxLineSchema = Type.Object(
  {
    seq: Count,
    block: FeedBlockSchema,
    index: Type.Integer({ minimum: 0, description: "the extrinsic's position in its block" }),
    tx_hash: Hex('the transaction hash'),
    extrinsic: Type.String({ description: 'the call' }),
    subject: Type.String({ description: 'the DID (or persona, application) the change is about' }),
    action: Type.String(),
    nonce_domain: Type.Optional(Type.String()),
    nonce: Type.Optional(Type.String()),
    limit_key: Type.String(),
    submitted_at_ms: Type.Integer({ description: 'Unix ms' }),
    success: Type.Boolean(),
    error: Type.Optional(Type.Object({ name: Type.String(), module: Type.String(), reason: Type.Optional(Type.String()) }, { additionalProperties: false })),
    payload: Type.Union([Hex("the extrinsic's SCALE bytes"), Type.Null()], { description: 'null for a block committed before the feed kept the bytes' }),
    signer_key_id: Type.Optional(Type.String()),
    signature: Type.Optional(Hex('the (first) signature inside the call, for readers')),
  },
  { additionalProperties: false, title: 'FeedTxLine' },
);

/** One export feed line. */
export const FeedLineSchema = Type.Union([FeedTxLineSchema, FeedBlockLineSchema], { title: 'FeedLine' });
/** A feed line as written: the extrinsic's fields absent on the line of a block without extrinsics. */
export type FeedLineJson = Static<typeof FeedBlockLineSchema> & Partial<Omit<Static<typeof FeedTxLineSchema>, 'seq' | 'block'>>;
