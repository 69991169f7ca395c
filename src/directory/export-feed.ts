/**
 * The export feed of the Directory's ledger (docs/mirrors.md): pages of finalized feed entries as JSON lines, and
 * the genesis parameters a follower starts its own chain from. Nothing here speaks HTTP.
 */
import { to0x, toHex } from '../base/bytes.js';
import { DdnError } from '../base/errors.js';
import type { GenesisConfig } from '../ledger/block.js';
import type { Ledger } from '../ledger/chain.js';
import { FEED_PAGE_MAX, feedBlockJson, feedLineJson, type FeedBlockJson } from '../ledger/feed.js';
import type { GenesisResponse } from '../wire/history.js';

/** One page of the feed: its lines (each a JSON text, no newline), the last seq in it, the finalized feed head. */
export interface FeedPage {
  lines: string[];
  lastSeq: number;
  headSeq: number;
}

/** `GET /export/genesis`: the genesis parameters, as a data directory's genesis.json holds them, and the hash. */
export type GenesisJson = GenesisResponse;

const SEQ_RE = /^(0|[1-9][0-9]{0,15})$/;

/** `after` / `cursor`: a non-negative integer (default 0). */
export function parseCursor(raw: string | undefined, field: string): number {
  if (raw === undefined) return 0;
  if (!SEQ_RE.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new DdnError('invalid_cursor', `${field} must be a non-negative integer`, { field });
  }
  return Number(raw);
}

/** `count`: 1…1000 (default 1000). */
export function parseCount(raw: string | undefined): number {
  if (raw === undefined) return FEED_PAGE_MAX;
  if (!/^[1-9][0-9]{0,3}$/.test(raw) || Number(raw) > FEED_PAGE_MAX) {
    throw new DdnError('invalid_count', `count must be an integer from 1 to ${FEED_PAGE_MAX}`, { field: 'count', max: FEED_PAGE_MAX });
  }
  return Number(raw);
}

export class ExportFeed {
  constructor(
    private readonly ledger: Ledger,
    private readonly genesis: GenesisConfig,
  ) {}

  genesisJson(): GenesisJson {
    const g = this.genesis;
    return {
      chain_id: g.chainId,
      profile: g.profile,
      genesis_time_ms: g.genesisTimeMs,
      persona_attestors: g.personaAttestors.map((k) => toHex(k)),
      genesis_hash: to0x(this.ledger.genesisHash),
    };
  }

  /** The seq of the last finalized feed entry (0: none). */
  headSeq(): number {
    return this.ledger.finalizedFeedSeq();
  }

  /** Up to `count` finalized entries after `after`, in order. */
  page(after: number, count: number): FeedPage {
    const headSeq = this.headSeq();
    const entries = this.ledger.finalizedFeed(after, Math.min(count, FEED_PAGE_MAX));
    const blocks = new Map<number, FeedBlockJson>();
    const lines = entries.map((e) => {
      let block = blocks.get(e.blockNumber);
      if (block === undefined) {
        const b = this.ledger.block(e.blockNumber);
        if (!b) throw new Error(`feed entry ${e.seq} names block ${e.blockNumber}, which is not stored`);
        block = feedBlockJson(b.block, b.txs.length);
        blocks.set(e.blockNumber, block);
      }
      return JSON.stringify(feedLineJson(e, block));
    });
    return { lines, lastSeq: entries.length === 0 ? after : entries[entries.length - 1]!.seq, headSeq };
  }
}
