/**
 * The export feed's wire format (docs/mirrors.md): one JSON object per line, per extrinsic of every finalized
 * block in block order — or one per block without extrinsics — numbered by `seq`. Each line carries its block's
 * header (enough to recompute the block hash and check the parent link) and the extrinsic's SCALE bytes as
 * `payload` (0x hex; its signature and signed payload are inside, `signature` repeats the first for readers), so a
 * follower can re-execute the block and verify every outcome. Pure: formatting and parsing, no I/O.
 */
import { parseHex, to0x } from '../base/bytes.js';
import type { BlockHeader } from './block.js';
import { decodeExtrinsic, type Call } from './extrinsic.js';
import type { FeedEntry, StoredBlock, TxError, TxMeta } from './store.js';
import type { FeedBlockJson, FeedLineJson } from '../wire/feed.js';

/** The most lines one `GET /export` page holds. */
export const FEED_PAGE_MAX = 1000;

/** The JSON of a line and of its block: src/wire/feed.ts, whose schemas the OpenAPI documents describe them by. */
export type { FeedBlockJson, FeedLineJson };

/** A parsed feed line: the header, and the extrinsic when the line has one. */
export interface FeedLine {
  seq: number;
  block: StoredBlock;
  extrinsicCount: number;
  tx?: {
    index: number;
    txHash: string;
    bytes: Uint8Array | undefined;
    meta: TxMeta;
    submittedAtMs: number;
    success: boolean;
  };
}

/** The signer and (first) signature inside a call, for readers of the feed. */
function signatureOf(call: Call): { keyId?: string; signature: Uint8Array } {
  const a = call.args as { signature?: Uint8Array; signerKeyId?: string; controlSignature?: Uint8Array; controlSignerKeyId?: string };
  if (a.signature !== undefined) return a.signerKeyId === undefined ? { signature: a.signature } : { keyId: a.signerKeyId, signature: a.signature };
  return { keyId: a.controlSignerKeyId!, signature: a.controlSignature! };
}

export function feedBlockJson(block: StoredBlock, extrinsicCount: number): FeedBlockJson {
  const h = block.header;
  return {
    number: h.number,
    hash: to0x(block.hash),
    parent_hash: to0x(h.parentHash),
    timestamp: h.timestampMs,
    extrinsics_root: to0x(h.extrinsicsRoot),
    results_root: to0x(h.resultsRoot),
    extrinsic_count: extrinsicCount,
  };
}

/** The JSON object of one feed entry; `block` is the entry's block with its extrinsic count. */
export function feedLineJson(entry: FeedEntry, block: FeedBlockJson): FeedLineJson {
  const line: FeedLineJson = { seq: entry.seq, block };
  const tx = entry.tx;
  if (tx === undefined) return line;
  line.index = tx.blockIndex!;
  line.tx_hash = tx.txHash;
  line.extrinsic = tx.extrinsic;
  line.subject = tx.meta.subject;
  line.action = tx.meta.action;
  if (tx.meta.nonceDomain !== undefined) line.nonce_domain = tx.meta.nonceDomain;
  if (tx.meta.nonce !== undefined) line.nonce = tx.meta.nonce;
  line.limit_key = tx.meta.limitKey;
  line.submitted_at_ms = tx.submittedAtMs;
  line.success = tx.status === 'included';
  if (tx.error) line.error = errorJson(tx.error);
  line.payload = tx.bytes === undefined ? null : to0x(tx.bytes);
  const call = tx.bytes === undefined ? undefined : decodeExtrinsic(tx.bytes);
  if (call) {
    const sig = signatureOf(call);
    if (sig.keyId !== undefined) line.signer_key_id = sig.keyId;
    line.signature = to0x(sig.signature);
  }
  return line;
}

function errorJson(e: TxError): { name: string; module: string; reason?: string } {
  return e.reason === undefined ? { name: e.name, module: e.module } : { name: e.name, module: e.module, reason: e.reason };
}

/** A feed line that does not parse. */
export class FeedFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FeedFormatError';
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function hash32(v: unknown, field: string): Uint8Array {
  const b = typeof v === 'string' && v.startsWith('0x') ? parseHex(v.slice(2)) : undefined;
  if (b === undefined || b.length !== 32) throw new FeedFormatError(`${field} is not 0x + 32 bytes of hex`);
  return b;
}

function str(v: unknown, field: string): string {
  if (typeof v !== 'string') throw new FeedFormatError(`${field} is not a string`);
  return v;
}

/** Parses one feed line (the JSON object); throws {@link FeedFormatError}. */
export function parseFeedLine(v: unknown): FeedLine {
  if (!isObj(v) || !isCount(v.seq) || !isObj(v.block)) throw new FeedFormatError('a feed line needs seq and block');
  const b = v.block;
  if (!isCount(b.number) || !isCount(b.timestamp) || !isCount(b.extrinsic_count))
    throw new FeedFormatError('block number, timestamp or extrinsic_count missing');
  const header: BlockHeader = {
    parentHash: hash32(b.parent_hash, 'block.parent_hash'),
    number: b.number,
    timestampMs: b.timestamp,
    extrinsicsRoot: hash32(b.extrinsics_root, 'block.extrinsics_root'),
    resultsRoot: hash32(b.results_root, 'block.results_root'),
  };
  const line: FeedLine = { seq: v.seq, block: { header, hash: hash32(b.hash, 'block.hash') }, extrinsicCount: b.extrinsic_count };
  if (v.index === undefined) return line;
  if (!isCount(v.index) || !isCount(v.submitted_at_ms) || typeof v.success !== 'boolean')
    throw new FeedFormatError('index, submitted_at_ms or success missing');
  const payload = v.payload === null ? undefined : typeof v.payload === 'string' && v.payload.startsWith('0x') ? parseHex(v.payload.slice(2)) : null;
  if (payload === null) throw new FeedFormatError('payload is not 0x hex');
  const meta: TxMeta = { subject: str(v.subject, 'subject'), action: str(v.action, 'action'), limitKey: str(v.limit_key, 'limit_key') };
  if (v.nonce_domain !== undefined) meta.nonceDomain = str(v.nonce_domain, 'nonce_domain');
  if (v.nonce !== undefined) meta.nonce = str(v.nonce, 'nonce');
  line.tx = { index: v.index, txHash: str(v.tx_hash, 'tx_hash'), bytes: payload, meta, submittedAtMs: v.submitted_at_ms, success: v.success };
  return line;
}
