/** The export stream's families in a node's (or a mirror's) `GET /metrics`. */
import type { FeedStream } from '../directory/export-stream.js';
import type { NodeMetrics } from './metrics.js';

export function watchFeedStream(metrics: NodeMetrics, stream: FeedStream): void {
  metrics.gauge('ddn_export_stream_sessions', 'Open GET /export/stream sessions', (g) => g.set(stream.sessions));
  metrics.countedBy('ddn_export_stream_closed_total', 'Export stream sessions closed or displaced because they did not answer pings', 'reason', () => ({
    not_reading: stream.counts.notReading,
  }));
  metrics.countedBy('ddn_export_stream_refused_total', 'Export stream upgrades refused with 503, by what was full', 'reason', () => ({
    address_share: stream.counts.refusedAddressShare,
    sessions: stream.counts.refusedFull,
  }));
}
