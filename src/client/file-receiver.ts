/**
 * Receiving files from every Cache of a DID (http-api.md §11.5, §11.6, §10.7): summaries from each Cache, one
 * download per message (chunk sets through `/cache/chunks`), decryption and checks of every part, the file handed
 * to a sink, and only then an acknowledgement at every Cache that holds a copy. A message held by several Caches
 * is written once; a copy that fails to decrypt or verify is never written nor acknowledged, and the next Cache's
 * copy is tried.
 */
import { errorCodeOf, memberOf } from '../base/guards.js';
import type { KeyObject } from 'node:crypto';
import { FileAssembler, openFileEnvelope, type FileHeader } from '../protocol/file-assembly.js';
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

/** One file being written, part by part, as its chunks are checked. */
export interface FileWriter {
  write(data: Uint8Array): Promise<void>;
  /** After the whole file verified: makes it durable under its final name and resolves with the path. */
  commit(): Promise<string>;
  /** Removes what was written (a chunk failed to decrypt or verify). */
  abort(): Promise<void>;
  /**
   * Closes the file and keeps what was written for a later run to continue (the Cache could not be read to the
   * end). A sink without it loses the part: {@link abort} is called instead.
   */
  suspend?(): Promise<void>;
  /** Where the part being written lives (for the report of a suspended file). */
  readonly partialPath?: string;
}

/** The part of a file an earlier run wrote and kept ({@link FileWriter.suspend}), verified chunk by chunk. */
export interface PartialFile {
  header: FileHeader;
  sender: VerifiedSender | null;
  /** Chunks (from the first) whose bytes verified against what was recorded when they were written. */
  chunks: number;
  bytes: number;
  /** The verified chunks' bytes, in order. */
  read(): AsyncIterable<Uint8Array>;
  /** Opens the part to append the next chunk (anything after the verified chunks is cut off). */
  writer(): Promise<FileWriter>;
  /** Removes the part (it does not belong to the message any more). */
  discard(): Promise<void>;
}

/**
 * Opens a file for the metadata its first record declares. `key` is the group id, or the message id when
 * unchunked; `sender` is the verified sender (null: anonymous). A sink with `resume` keeps the parts of files
 * whose download stopped, and the receiver continues them where they stopped.
 */
export type FileSink = ((file: FileHeader, key: string, sender: VerifiedSender | null) => Promise<FileWriter>) & {
  resume?(key: string): Promise<PartialFile | undefined>;
};

/** A file whose download stopped part-way and whose part is kept for the next run. */
export interface SuspendedFile {
  message_key: string;
  name: string;
  received_bytes: number;
  total_bytes: number;
  /** The hidden file holding the part, when the sink says. */
  partial?: string;
}

/** The sender of a message, after its signatures verified (http-api.md §10.2). */
export interface VerifiedSender {
  did: string;
  key_id: string;
}

/**
 * Checks an envelope's sender signature (§10.2) and resolves with the sender, null for an anonymous envelope;
 * rejects (code `invalid_sender_signature`) when the signature does not verify.
 */
export type SenderCheck = (envelope: Readonly<Record<string, unknown>>) => Promise<VerifiedSender | null>;

/** Progress of the file being received. */
export interface ReceiveProgress {
  key: string;
  name: string;
  receivedBytes: number;
  totalBytes: number;
}

/** Options of {@link FileReceiver}. */
export interface FileReceiverOptions {
  /** Verifies sender signatures; without it, a signed message is refused (the claim cannot be checked). */
  checkSender?: SenderCheck;
  onProgress?(p: ReceiveProgress): void;
  /** The clock of {@link WRITTEN_KEPT_MS} (default `Date.now`). */
  nowMs?: () => number;
}

/**
 * How long the key of a written message is remembered once no Cache lists it any more (a sweep every Cache
 * answered): long enough for its live push, if one is still on its way. While a Cache lists it (its
 * acknowledgement failed) it is remembered, so it is acknowledged again rather than written twice. Before, a
 * receiver that follows (`ddn receive --follow`) remembered every key it wrote for as long as it ran.
 */
export const WRITTEN_KEPT_MS = 10 * 60_000;

/** A written file. */
export interface ReceivedFile {
  path: string;
  name: string;
  media_type: string;
  size_bytes: number;
  sha256: string;
  message_group_id?: string;
  message_ids: string[];
  /** The verified sender; null when the message is anonymous (carries no sender signature). */
  sender: VerifiedSender | null;
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
  /** Files whose download stopped part-way; a later run continues them (absent when none). */
  suspended?: SuspendedFile[];
}

/** A failure of the transport (no answer, no connection, a 5xx): the copy may still be good, the part is kept. */
function transportFailure(e: unknown): boolean {
  const name = memberOf(e, 'name');
  if (name === 'RequestFailedError' || name === 'AbortError' || name === 'TimeoutError') return true;
  if (e instanceof TypeError && e.message === 'fetch failed') return true;
  const status = memberOf(e, 'status');
  return name === 'DirectoryApiError' && typeof status === 'number' && (status >= 500 || status === 408 || status === 429);
}

function failure(e: unknown, endpoint?: string, key?: string): ReceiveFailure {
  const code = errorCodeOf(e) ?? 'receive_failed';
  const f: ReceiveFailure = { code, message: e instanceof Error ? e.message : String(e) };
  if (endpoint !== undefined) f.endpoint = endpoint;
  if (key !== undefined) f.message_key = key;
  return f;
}

/** Messages of one group (or one unchunked message) per Cache index. */
type Copies = Map<number, CacheSummaryItem[]>;

/** Receives files for one recipient from a fixed set of Caches. Calls are serialised. */
export class FileReceiver {
  /**
   * Group or message ids written by this receiver, and when (dedupe across Caches, sweeps and live pushes): while
   * a Cache lists them, and {@link WRITTEN_KEPT_MS} at least.
   */
  private readonly written = new Map<string, number>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly profile: Profile,
    private readonly caches: readonly CacheReader[],
    private readonly decryptionKey: KeyObject | null,
    private readonly sink: FileSink,
    private readonly log: (line: string) => void = () => {},
    private readonly opts: FileReceiverOptions = {},
  ) {}

  /** Keys of written messages remembered now (tests). */
  get rememberedKeys(): number {
    return this.written.size;
  }

  private now(): number {
    return (this.opts.nowMs ?? Date.now)();
  }

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
    await Promise.all(
      this.caches.map(async (cache, i) => {
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
      }),
    );
    for (const [key, copies] of groups) {
      if (this.written.has(key)) {
        await this.acknowledge(copies, key, report);
        continue;
      }
      const ids = [...new Set([...copies.values()].flat().map((m) => m.message_id))].sort();
      const received = await this.download(key, copies, ids, report);
      if (received !== undefined) received.acknowledged = await this.acknowledge(copies, key, report);
    }
    // every Cache answered: what none lists any more is forgotten once its live push can no longer be on its way
    if (report.caches.every((c) => c.pending !== null)) {
      const before = this.now() - WRITTEN_KEPT_MS;
      for (const [key, atMs] of this.written) if (atMs <= before && !groups.has(key)) this.written.delete(key);
    }
    return report;
  }

  /** The copy of each Cache in turn until one is written: its envelopes one at a time, in sequence order. */
  private async download(key: string, copies: Copies, ids: string[], report: ReceiveReport): Promise<ReceivedFile | undefined> {
    for (const [i, items] of copies) {
      const cache = this.caches[i]!;
      const sorted = [...items].sort((a, b) => (a.sequence_number ?? 0) - (b.sequence_number ?? 0));
      const total = sorted[0]!.total_chunks ?? 1;
      const resumed = await this.sink.resume?.(key);
      const skip = resumed?.chunks ?? 0;
      if (resumed !== undefined)
        this.log(`resuming ${resumed.header.name}: ${resumed.chunks} of ${resumed.header.total} chunk(s), ${resumed.bytes} bytes kept`);
      const envelopes = async function* (): AsyncGenerator<Record<string, unknown>> {
        if (sorted.length !== total || sorted.some((m, seq) => (m.sequence_number ?? 0) !== seq)) {
          throw new TransferError('incomplete_chunk_set', `the Cache lists ${sorted.length} of ${total} chunks`);
        }
        for (const item of sorted.slice(skip)) {
          const r = await cache.message(item.message_id);
          if (r.message?.message_id !== item.message_id)
            throw new TransferError('incomplete_chunk_set', `the Cache answered another message for ${item.message_id}`);
          yield r.message.envelope;
        }
      };
      const outcome = await this.write(key, envelopes(), ids, 'cache', report, cache.target.endpoint, resumed);
      if (outcome !== 'retry') {
        // another Cache's copy finished what one that stopped answering began
        if (report.suspended !== undefined) report.suspended = report.suspended.filter((f) => f.message_key !== key);
        if (report.suspended?.length === 0) delete report.suspended;
        return outcome;
      }
    }
    return undefined;
  }

  /**
   * Opens, checks and writes the envelopes of one file as they come, holding one chunk at a time; commits the file
   * once its size and SHA-256 verified. `retry` when this copy failed (another Cache's copy may do); undefined when
   * the file could not be written at all (e.g. the name is taken), which no other copy changes.
   */
  private async write(
    key: string,
    envelopes: AsyncIterable<Record<string, unknown>>,
    ids: string[],
    source: 'cache' | 'live',
    report: ReceiveReport,
    endpoint?: string,
    resumed?: PartialFile,
  ): Promise<ReceivedFile | 'retry' | undefined> {
    const assembler = new FileAssembler();
    let writer: FileWriter | undefined;
    let sender: VerifiedSender | null | undefined;
    let stage: 'copy' | 'sink' = 'copy';
    let header: FileHeader | undefined;
    try {
      if (resumed !== undefined) {
        // the kept chunks count towards the size and SHA-256 of the file, as if they had just been downloaded
        stage = 'sink';
        const h = resumed.header;
        let sequence = 0;
        for await (const data of resumed.read()) header = assembler.add({ ...h, sequence: sequence++, data });
        sender = resumed.sender;
        writer = await resumed.writer();
        stage = 'copy';
      }
      for await (const envelope of envelopes) {
        const record = openFileEnvelope(this.profile, envelope, this.decryptionKey);
        const from = await this.senderOf(envelope);
        if (sender !== undefined && JSON.stringify(sender) !== JSON.stringify(from))
          throw new TransferError('inconsistent_chunk_set', 'the chunks of one file name different senders');
        sender = from;
        header = assembler.add(record);
        stage = 'sink';
        writer ??= await this.sink(header, key, from);
        await writer.write(record.data);
        stage = 'copy';
        this.opts.onProgress?.({ key, name: header.name, receivedBytes: assembler.received, totalBytes: header.sizeBytes });
      }
      const file = assembler.finish();
      stage = 'sink';
      if (writer === undefined) throw new TransferError('incomplete_chunk_set', 'no records');
      const path = await writer.commit();
      this.written.set(key, this.now());
      this.log(`wrote ${path} (${file.sizeBytes} bytes) ${sender ? `from ${sender.did} (signature verified)` : 'from an anonymous sender'}`);
      const received: ReceivedFile = {
        path,
        name: file.name,
        media_type: file.mediaType,
        size_bytes: file.sizeBytes,
        sha256: file.sha256Hex,
        message_ids: ids,
        sender: sender ?? null,
        source,
        acknowledged: [],
      };
      if (file.groupId !== '') received.message_group_id = file.groupId;
      report.files.push(received);
      return received;
    } catch (e) {
      if (stage === 'copy' && writer?.suspend !== undefined && header !== undefined && transportFailure(e)) {
        await writer.suspend().catch(() => undefined);
        const kept: SuspendedFile = { message_key: key, name: header.name, received_bytes: assembler.received, total_bytes: header.sizeBytes };
        if (writer.partialPath !== undefined) kept.partial = writer.partialPath;
        (report.suspended ??= []).push(kept);
      } else {
        await (writer ?? (resumed === undefined ? undefined : { abort: () => resumed.discard() }))?.abort().catch(() => undefined);
      }
      // reported once, through `report.errors` (a CLI prints each error of the report)
      report.errors.push(failure(e, stage === 'copy' ? endpoint : undefined, key));
      return stage === 'copy' ? 'retry' : undefined;
    }
  }

  /** The verified sender of an envelope, null when it carries none. */
  private async senderOf(envelope: Readonly<Record<string, unknown>>): Promise<VerifiedSender | null> {
    if (envelope.sender === undefined) return null;
    if (this.opts.checkSender === undefined) throw new TransferError('record_mismatch', 'the message is signed and no sender check is configured');
    return this.opts.checkSender(envelope);
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
    const one = async function* (): AsyncGenerator<Record<string, unknown>> {
      yield envelope;
    };
    const received = await this.write(id, one(), [id], 'live', report);
    if (received === undefined || received === 'retry') return report;
    const all: Copies = new Map(this.caches.map((_, i) => [i, [{ message_id: id } as CacheSummaryItem]]));
    received.acknowledged = await this.acknowledge(all, id, report);
    return report;
  }
}
