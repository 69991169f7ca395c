/**
 * The export feed's routes (docs/mirrors.md): `GET /export?after=<seq>&count=<n>` (JSON lines,
 * `application/jsonl`), `GET /export/genesis`, and the WebSocket `GET /export/stream?cursor=<seq>`.
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { GenesisConfig } from '../ledger/block.js';
import type { Ledger } from '../ledger/chain.js';
import { json, type HttpServer } from '../http/server.js';
import { Type } from 'typebox';
import { ExportFeed, parseCount, parseCursor } from './export-feed.js';
import { withDirectoryRateClasses } from './rate-classes.js';
import { describeUpgrade } from '../http/openapi-additions.js';
import { attachFeedStream, type FeedStream, type FeedStreamLimits } from './export-stream.js';

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

/** Adds the export routes to the Directory's server; the returned stream is closed with the server. */
export function registerExportRoutes(directoryServer: HttpServer, o: ExportRouteOptions): FeedStream {
  // rate class `read`, as every Directory read
  const server = withDirectoryRateClasses(directoryServer);
  const feed = new ExportFeed(o.ledger, o.genesis);
  const jsonLines = Type.String({ description: 'one JSON object per line (docs/mirrors.md)', contentMediaType: JSONL_CONTENT_TYPE });
  server.route(
    'GET',
    '/export',
    ({ query }) => {
      const page = feed.page(parseCursor(query.after, 'after'), parseCount(query.count));
      const text = page.lines.length === 0 ? '' : `${page.lines.join('\n')}\n`;
      return {
        status: 200,
        body: {},
        payload: text,
        contentType: `${JSONL_CONTENT_TYPE}; charset=utf-8`,
        headers: { [FEED_HEAD_HEADER]: String(page.headSeq) },
      };
    },
    { schema: { summary: 'The export feed: finalized operations after a seq, as JSON lines', response: { 200: jsonLines } } },
  );
  server.route('GET', '/export/genesis', () => json(200, feed.genesisJson()));
  describeUpgrade(server.fastify, {
    path: '/export/stream',
    summary: 'The export feed, live: finalized operations after `cursor`, then each as it is final (docs/mirrors.md)',
    parameters: [{ name: 'cursor', in: 'query', description: 'the last seq already held (default 0)' }],
    errors: [400, 404, 405, 429, 503],
    messages: 'Server → client: one JSON feed line per text frame.',
  });
  return attachFeedStream({
    server: server.fastify.server,
    feed,
    ledger: o.ledger,
    ...(o.streamLimits === undefined ? {} : { limits: o.streamLimits }),
    ...(o.logger === undefined ? {} : { logger: o.logger }),
    ...(o.clientOf === undefined ? {} : { clientOf: o.clientOf }),
  });
}
