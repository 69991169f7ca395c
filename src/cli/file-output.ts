/**
 * Where `ddn receive` writes files: a directory, never replacing an existing file. Each file is written part by
 * part into a hidden partial file beside its destination (`.ddn-partial-<id>`), made durable (fsync), and only then
 * linked under its final name. Beside the part, a small record (`.ddn-partial-<id>.json`) lists the size and
 * SHA-256 of every chunk written, so a run that stopped (Ctrl-C, a Cache that stopped answering) is continued by
 * the next: the kept chunks are read back and checked against the record, and the download goes on from the first
 * chunk that is missing or does not match. A file that fails to decrypt or verify loses its part at once; a
 * finished run removes the parts of the DID that no Cache lists any more.
 */
import { errorCodeOf } from '../base/guards.js';
import { createHash, randomBytes } from 'node:crypto';
import { link, open, readdir, readFile, rename, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { parseHex, toHex } from '../base/bytes.js';
import type { FileSink, FileWriter, PartialFile, VerifiedSender } from '../client/file-receiver.js';
import type { FileHeader } from '../protocol/file-assembly.js';

/** The sender's name when it is a plain file name; otherwise `<key>.bin`. */
export function safeFileName(name: string, key: string): string {
  const plain = name !== '' && name !== '.' && name !== '..' && !/[/\\\0]/.test(name) && !name.startsWith('.');
  return plain ? name : `${key}.bin`;
}

/** Links `from` as `to` unless `to` exists; false when it does. */
async function linkNew(from: string, to: string): Promise<boolean> {
  try {
    await link(from, to);
    return true;
  } catch (e) {
    if (errorCodeOf(e) === 'EEXIST') return false;
    throw e;
  }
}

const PREFIX = '.ddn-partial-';

/** What the record beside a part says. */
interface PartRecord {
  did: string;
  key: string;
  name: string;
  media_type: string;
  size_bytes: number;
  sha256: string;
  group_id: string;
  total: number;
  sender: VerifiedSender | null;
  chunks: { bytes: number; sha256: string }[];
}

const sha256Hex = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** The part's path for a message key (group id or message id) of `did`. */
function partPath(dir: string, did: string, key: string): string {
  return join(dir, `${PREFIX}${sha256Hex(new TextEncoder().encode(`${did}\n${key}`)).slice(0, 32)}`);
}

async function readRecord(path: string): Promise<PartRecord | undefined> {
  try {
    return JSON.parse(await readFile(`${path}.json`, 'utf8')) as PartRecord;
  } catch {
    return undefined;
  }
}

async function removePart(path: string): Promise<void> {
  await unlink(path).catch(() => undefined);
  await unlink(`${path}.json`).catch(() => undefined);
}

/**
 * A writer appending to the part at `path` (whose first `record.chunks` are kept), rewriting the record after
 * every chunk; commit links it under the sender's file name (or `<stem>-<key><ext>` when that is taken).
 */
async function partWriter(dir: string, path: string, record: PartRecord, bytes: number): Promise<FileWriter> {
  const fh: FileHandle = await open(path, bytes === 0 ? 'w' : 'r+', 0o600);
  await fh.truncate(bytes);
  let position = bytes;
  let isOpen = true;
  const close = async (): Promise<void> => {
    if (isOpen) await fh.close();
    isOpen = false;
  };
  const saveRecord = async (): Promise<void> => {
    const tmp = `${path}.json.${randomBytes(4).toString('hex')}`;
    await writeFile(tmp, JSON.stringify(record), { mode: 0o600 });
    await rename(tmp, `${path}.json`);
  };
  await saveRecord();
  const name = safeFileName(record.name, record.key);
  return {
    partialPath: path,
    async write(data) {
      await fh.write(data, 0, data.length, position);
      position += data.length;
      record.chunks.push({ bytes: data.length, sha256: sha256Hex(data) });
      await saveRecord();
    },
    async commit() {
      try {
        await fh.sync();
        await close();
        const ext = extname(name);
        for (const candidate of [name, `${name.slice(0, name.length - ext.length)}-${record.key}${ext}`]) {
          const target = join(dir, candidate);
          if (await linkNew(path, target)) return target;
        }
        throw Object.assign(new Error(`${join(dir, name)} and its alternative name exist; not overwriting`), { code: 'output_exists' });
      } finally {
        await removePart(path);
      }
    },
    async abort() {
      await close();
      await removePart(path);
    },
    async suspend() {
      await fh.sync().catch(() => undefined);
      await close();
    },
  };
}

/** The chunks of the part at `path` that match its record, counted from the first. */
async function verifiedChunks(path: string, record: PartRecord): Promise<{ chunks: number; bytes: number }> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch {
    return { chunks: 0, bytes: 0 };
  }
  let chunks = 0;
  let bytes = 0;
  try {
    for (const c of record.chunks) {
      const buf = Buffer.alloc(c.bytes);
      const { bytesRead } = await fh.read(buf, 0, c.bytes, bytes);
      if (bytesRead !== c.bytes || sha256Hex(buf) !== c.sha256) break;
      chunks++;
      bytes += c.bytes;
    }
  } finally {
    await fh.close();
  }
  return { chunks, bytes };
}

/**
 * A sink writing into `dir` for `did`: the sender's file name, or `<stem>-<key><ext>` when that name is taken;
 * durable (fsync) before the receiver acknowledges anything; resumable (see the module comment).
 */
export function directorySink(dir: string, did: string): FileSink & { sweepParts(pending: ReadonlySet<string>): Promise<string[]> } {
  const sink = async (file: FileHeader, key: string, sender: VerifiedSender | null): Promise<FileWriter> => {
    const record: PartRecord = {
      did,
      key,
      name: file.name,
      media_type: file.mediaType,
      size_bytes: file.sizeBytes,
      sha256: toHex(file.sha256),
      group_id: file.groupId,
      total: file.total,
      sender,
      chunks: [],
    };
    return partWriter(dir, partPath(dir, did, key), record, 0);
  };
  const resume = async (key: string): Promise<PartialFile | undefined> => {
    const path = partPath(dir, did, key);
    const record = await readRecord(path);
    const digest = record === undefined ? undefined : parseHex(record.sha256);
    if (record === undefined || digest === undefined || record.key !== key || record.did !== did) return undefined;
    const { chunks, bytes } = await verifiedChunks(path, record);
    if (chunks === 0) {
      await removePart(path);
      return undefined;
    }
    const kept = { ...record, chunks: record.chunks.slice(0, chunks) };
    const header: FileHeader = {
      name: record.name,
      mediaType: record.media_type,
      sizeBytes: record.size_bytes,
      sha256: digest,
      groupId: record.group_id,
      total: record.total,
    };
    return {
      header,
      sender: record.sender,
      chunks,
      bytes,
      async *read() {
        const fh = await open(path, 'r');
        try {
          let at = 0;
          for (const c of kept.chunks) {
            const buf = Buffer.alloc(c.bytes);
            await fh.read(buf, 0, c.bytes, at);
            at += c.bytes;
            yield buf;
          }
        } finally {
          await fh.close();
        }
      },
      writer: () => partWriter(dir, path, kept, bytes),
      discard: () => removePart(path),
    };
  };
  /**
   * Removes the parts of `did` whose message key is not in `pending`, parts with no record (an older ddn's), and
   * records left half-written; their paths.
   */
  const sweepParts = async (pending: ReadonlySet<string>): Promise<string[]> => {
    const removed: string[] = [];
    for (const entry of await readdir(dir).catch(() => [] as string[])) {
      if (!entry.startsWith(PREFIX) || entry.endsWith('.json')) continue;
      const tmp = entry.indexOf('.json.');
      const path = join(dir, tmp < 0 ? entry : entry.slice(0, tmp));
      const record = await readRecord(path);
      if (record !== undefined && record.did !== did) continue;
      if (tmp >= 0) {
        // a record of this DID half-written when a run was interrupted: never read, always removed
        await unlink(join(dir, entry)).catch(() => undefined);
      } else if (record !== undefined && pending.has(record.key)) continue;
      else await removePart(path);
      removed.push(join(dir, entry));
    }
    return removed;
  };
  return Object.assign(sink, { resume, sweepParts });
}
