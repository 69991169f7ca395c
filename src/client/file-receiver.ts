/**
 * Receiving files from every Cache of a DID (http-api.md §11.5, §11.6, §10.7): summaries from each Cache, one
 * download per message (chunk sets through `/cache/chunks`), decryption and checks of every part, the file handed
 * to a sink, and only then an acknowledgement at every Cache that holds a copy. A message held by several Caches
 * is written once; a copy that fails to decrypt or verify is never written nor acknowledged, and the next Cache's
 * copy is tried.
 */
import type { KeyObject } from 'node:crypto';
import { assembleFile, openFileEnvelope, type AssembledFile } from '../protocol/file-assembly.js';
import type { FileRecord } from '../protocol/file-record.js';
import type { Profile } from '../protocol/profile.js';
import { TransferError } from '../protocol/transfer-error.js';
import type { CacheTarget } from './cache-client.js';
import type { CacheChunksResponse, CacheMessageResponse, CacheSummaryItem, CacheSummaryResponse } from './transfer-types.js';

/** What the receiver needs of one Cache (`CacheClient` provides it). */
export interface CacheReader {
  readonly target: CacheTarget;
  summary(): Promise<CacheSummaryResponse>;
  chunks(groupId: string): Promise<CacheChunksResponse>;
  message(messageId: string): Promise<CacheMessageResponse>;
  /** Resolves with the ids actually deleted. */
  ack(messageIds: readonly string[]): Promise<string[]>;
}

/** Writes a verified file and resolves with where it went. `key` is the group id, or the message id when unchunked. */
export type FileSink = (file: AssembledFile, key: string) => Promise<string>;

/** A written file. */
export interface ReceivedFile {
  path: string;
  name: string;
  media_type: string;
  size_bytes: number;
  sha256: string;
  message_group_id?: string;
  message_ids: string[];
  /** `cache` for a Cache download, `live` for a WebSocket push. */
  source: 'cache' | 'live';
  /** Per Cache endpoint, how many copies it deleted on acknowledgement. */
  acknowledged: { endpoint: string; acked: number }[];
}

/** One failure; the sweep goes on. */
export interface ReceiveFailure {
  code: string;
  message: string;
  endpoint?: string;
  /** Group id or message id. */
  message_key?: string;
}

/** The outcome of one sweep (or one live message). */
export interface ReceiveReport {
  files: ReceivedFile[];
  errors: ReceiveFailure[];
  caches: { endpoint: string; service_id: string; pending: number | null }[];
}

function failure(e: unknown, endpoint?: string, key?: string): ReceiveFailure {
  const code = typeof (e as { code?: unknown })?.code === 'string' ? (e as { code: string }).code : 'receive_failed';
  const f: ReceiveFailure = { code, message: e instanceof Error ? e.message : String(e) };
  if (endpoint !== undefined) f.endpoint = endpoint;
  if (key !== undefined) f.message_key = key;
  return f;
}

/** Messages of one group (or one unchunked message) per Cache index. */
type Copies = Map<number, CacheSummaryItem[]>;

/** Receives files for one recipient from a fixed set of Caches. Calls are serialised. */
export class FileReceiver {
  /** Group or message ids already written by this receiver (dedupe across Caches, sweeps and live pushes). */
  readonly written = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly profile: Profile,
    private readonly caches: readonly CacheReader[],
    private readonly decryptionKey: KeyObject | null,
    private readonly sink: FileSink,
    private readonly log: (line: string) => void = () => {},
  ) {}

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Reads every Cache's summary and receives every complete message found. */
  sweep(): Promise<ReceiveReport> {
    return this.serial(() => this.sweepNow());
  }

  /** Handles an envelope pushed live (§10.8): decrypts, writes, then acknowledges the Cache copies. */
  acceptLive(envelope: Record<string, unknown>): Promise<ReceiveReport> {
    return this.serial(() => this.liveNow(envelope));
  }

  private async sweepNow(): Promise<ReceiveReport> {
    const report: ReceiveReport = { files: [], errors: [], caches: [] };
    const groups = new Map<string, Copies>();
    await Promise.all(this.caches.map(async (cache, i) => {
      const row = { endpoint: cache.target.endpoint, service_id: cache.target.serviceId, pending: null as number | null };
      report.caches[i] = row;
      try {
        const s = await cache.summary();
        if (!Array.isArray(s.messages) || s.count !== s.messages.length) throw new TransferError('incomplete_chunk_set', 'invalid Cache summary');
        row.pending = s.messages.length;
        for (const item of s.messages) {
          const key = item.message_group_id ?? item.message_id;
          const copies = groups.get(key) ?? new Map<number, CacheSummaryItem[]>();
          groups.set(key, copies);
          copies.set(i, [...(copies.get(i) ?? []), item]);
        }
      } catch (e) {
        report.errors.push(failure(e, cache.target.endpoint));
      }
    }));
    for (const [key, copies] of groups) {
      if (this.written.has(key)) {
        await this.acknowledge(copies, key, report);
        continue;
      }
      const file = await this.download(key, copies, report);
      if (file === undefined) continue;
      const ids = [...new Set([...copies.values()].flat().map((m) => m.message_id))].sort();
      const received = await this.deliver(file, key, ids, 'cache', report);
      if (received !== undefined) received.acknowledged = await this.acknowledge(copies, key, report);
    }
    return report;
  }

  private async download(key: string, copies: Copies, report: ReceiveReport): Promise<AssembledFile | undefined> {
    for (const [i, items] of copies) {
      const cache = this.caches[i]!;
      try {
        const first = items[0]!;
        let envelopes: { id: string; envelope: Record<string, unknown> }[];
        if (first.message_group_id !== undefined) {
          const r = await cache.chunks(first.message_group_id);
          const got = r.chunks.map((c) => c.message_id).sort();
          const want = items.map((m) => m.message_id).sort();
          if (r.complete !== true || got.join(',') !== want.join(',')) throw new TransferError('incomplete_chunk_set', 'the chunk set differs from the summary');
          envelopes = r.chunks.map((c) => ({ id: c.message_id, envelope: c.envelope }));
        } else {
          const r = await cache.message(first.message_id);
          envelopes = [{ id: r.message.message_id, envelope: r.message.envelope }];
        }
        const records: FileRecord[] = envelopes.map((e) => openFileEnvelope(this.profile, e.envelope, this.decryptionKey));
        return assembleFile(records);
      } catch (e) {
        report.errors.push(failure(e, cache.target.endpoint, key));
        this.log(`message ${key} at ${cache.target.endpoint}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    return undefined;
  }

  /** Hands the file to the sink; a sink failure (e.g. the name is taken) is reported and nothing is acknowledged. */
  private async deliver(file: AssembledFile, key: string, ids: string[], source: 'cache' | 'live', report: ReceiveReport): Promise<ReceivedFile | undefined> {
    let path: string;
    try {
      path = await this.sink(file, key);
    } catch (e) {
      report.errors.push(failure(e, undefined, key));
      return undefined;
    }
    this.written.add(key);
    this.log(`wrote ${path} (${file.data.length} bytes)`);
    const received: ReceivedFile = {
      path, name: file.name, media_type: file.mediaType, size_bytes: file.data.length, sha256: file.sha256Hex,
      message_ids: ids, source, acknowledged: [],
    };
    if (file.groupId !== '') received.message_group_id = file.groupId;
    report.files.push(received);
    return received;
  }

  /** Acknowledges the copies each Cache holds; failures are reported and leave the copies in place. */
  private async acknowledge(copies: Copies, key: string, report: ReceiveReport): Promise<{ endpoint: string; acked: number }[]> {
    const out: { endpoint: string; acked: number }[] = [];
    for (const [i, items] of copies) {
      const cache = this.caches[i]!;
      try {
        const deleted = await cache.ack(items.map((m) => m.message_id));
        out.push({ endpoint: cache.target.endpoint, acked: deleted.length });
      } catch (e) {
        report.errors.push(failure(e, cache.target.endpoint, key));
      }
    }
    return out;
  }

  private async liveNow(envelope: Record<string, unknown>): Promise<ReceiveReport> {
    const report: ReceiveReport = { files: [], errors: [], caches: [] };
    const id = typeof envelope.message_id === 'string' ? envelope.message_id : '';
    if (id === '' || this.written.has(id)) return report;
    let file: AssembledFile;
    try {
      file = assembleFile([openFileEnvelope(this.profile, envelope, this.decryptionKey)]);
    } catch (e) {
      report.errors.push(failure(e, undefined, id));
      return report;
    }
    const received = await this.deliver(file, id, [id], 'live', report);
    if (received === undefined) return report;
    const all: Copies = new Map(this.caches.map((_, i) => [i, [{ message_id: id } as CacheSummaryItem]]));
    received.acknowledged = await this.acknowledge(all, id, report);
    return report;
  }
}
