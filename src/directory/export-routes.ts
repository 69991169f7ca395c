/**
 * The export feed's routes (docs/mirrors.md): `GET /export?after=<seq>&count=<n>` (JSON lines,
 * `application/jsonl`), `GET /export/genesis`, and the WebSocket `GET /export/stream?cursor=<seq>`.
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { GenesisConfig } from '../ledger/block.js';
import type { Ledger } from '../ledger/chain.js';
import { json } from '../http/server.js';
import type { RouteEntry } from '../http/route.js';
import { Type, type TSchema } from 'typebox';
import { ExportFeed, parseCount, parseCursor } from './export-feed.js';
import { read } from './route-kit.js';
import { GenesisSchema } from '../wire/history.js';
import { createFeedStream, FEED_STREAM_UPGRADE_ERRORS, SLOW_CONSUMER_CLOSE, type FeedStream, type FeedStreamLimits } from './export-stream.js';
import { FeedLineSchema } from '../wire/feed.js';

export const JSONL_CONTENT_TYPE = 'application/jsonl';
/** The seq of the last finalized entry when the page was read (a follower's lag: head − its cursor). */
export const FEED_HEAD_HEADER = 'ddn-feed-head';

export interface ExportRouteOptions {
  ledger: Ledger;
  genesis: GenesisConfig;
  logger?: Logger;
  streamLimits?: Partial<FeedStreamLimits>;
  /** The client address of a stream upgrade (default: the socket's peer). */
  clientOf?: (req: IncomingMessage) => string;
}

/** The export feed of a ledger and its live stream (attached to a server by its route list's WebSocket entry). */
export interface ExportFeedParts {
  readonly feed: ExportFeed;
  readonly stream: FeedStream;
}

/** The feed of `o.ledger` and its stream; the stream is closed with the node (`stream.close()`). */
export function exportFeedParts(o: ExportRouteOptions): ExportFeedParts {
  const feed = new ExportFeed(o.ledger, o.genesis);
  const stream = createFeedStream({
    feed,
    ledger: o.ledger,
    ...(o.streamLimits === undefined ? {} : { limits: o.streamLimits }),
    ...(o.logger === undefined ? {} : { logger: o.logger }),
    ...(o.clientOf === undefined ? {} : { clientOf: o.clientOf }),
  });
  return { feed, stream };
}

/** The export feed's routes: its two pages and its WebSocket stream, in the Directory's list. */
export function exportRoutes({ feed, stream }: ExportFeedParts): RouteEntry[] {
  const jsonLines = Type.String({ description: 'one JSON object per line (docs/mirrors.md)', contentMediaType: JSONL_CONTENT_TYPE });
  const text = { description: 'one JSON object per line (docs/mirrors.md)', content: { [JSONL_CONTENT_TYPE]: { schema: jsonLines } } } as unknown as TSchema;
  return [
    read({
      url: '/export',
      summary: 'The export feed: finalized operations after a seq, as JSON lines',
      query: Type.Object({
        after: Type.Optional(Type.String({ description: 'the last seq already held (default 0)' })),
        count: Type.Optional(Type.String({ description: 'how many lines at most' })),
      }),
      answers: { 200: text },
      errors: ['invalid_cursor', 'invalid_count'],
      handle: ({ query }) => {
        const page = feed.page(parseCursor(query.after, 'after'), parseCount(query.count));
        return {
          status: 200 as const,
          body: {},
          payload: page.lines.length === 0 ? '' : `${page.lines.join('\n')}\n`,
          contentType: `${JSONL_CONTENT_TYPE}; charset=utf-8`,
          headers: { [FEED_HEAD_HEADER]: String(page.headSeq) },
        };
      },
    }),
    read({
      url: '/export/genesis',
      summary: "The chain's genesis, for a mirror",
      answers: { 200: GenesisSchema },
      errors: [],
      handle: () => json(200, feed.genesisJson()),
    }),
    {
      kind: 'upgrade',
      doc: {
        path: '/export/stream',
        summary: 'The export feed, live: finalized operations after `cursor`, then each as it is final (docs/mirrors.md)',
        parameters: [{ name: 'cursor', in: 'query', description: 'the last seq already held (default 0)' }],
        errors: FEED_STREAM_UPGRADE_ERRORS,
        messages:
          'Server → client: one JSON feed line per text frame (`x-websocket-frames`), and pings: a session that leaves one unanswered when the next is due is dropped without a close frame.',
        frames: {
          description: 'one export feed line per text frame, in seq order, the same lines as `GET /export` (docs/mirrors.md)',
          schema: FeedLineSchema,
        },
        closes: [
          {
            code: SLOW_CONSUMER_CLOSE.code,
            reason: SLOW_CONSUMER_CLOSE.reason,
            when: 'a page stayed unwritten for the stall time: the consumer cannot keep up',
          },
          { code: 1011, reason: 'internal_error', when: 'the feed could not be read' },
          { code: 1001, reason: 'server_closing', when: 'the node stops' },
        ],
      },
      attach: (server) => stream.attach(server),
    },
  ];
}
