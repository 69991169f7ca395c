/** The `--input` of `ddn send`: a file read part by part, or standard input (`-`) read into memory. */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { FileSource } from '../client/file-sender.js';
import { UsageError } from './command.js';

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk));
  return Buffer.concat(parts);
}

/** The bytes of standard input as a {@link FileSource} named `name` (default `stdin`). */
export async function stdinSource(stdin: NodeJS.ReadableStream | undefined, name = 'stdin'): Promise<FileSource> {
  if (stdin === undefined) throw new UsageError('no standard input to read');
  const data = await readAll(stdin);
  return {
    name,
    size: data.length,
    sha256: new Uint8Array(createHash('sha256').update(data).digest()),
    read: async (offset, length) => new Uint8Array(data.subarray(offset, offset + length)),
  };
}

/**
 * A file as a {@link FileSource}: hashed once up front, then read part by part, so large files are never held in
 * memory whole. The size is checked again at each read; a file that changes while sending fails the check.
 */
export async function fileSource(path: string, name = basename(path)): Promise<FileSource> {
  let size: number;
  try {
    const s = await stat(path);
    if (!s.isFile()) throw new Error('not a regular file');
    size = s.size;
  } catch (e) {
    throw new UsageError(`cannot read ${path}: ${(e as Error).message}`);
  }
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  const sha256 = new Uint8Array(hash.digest());
  return {
    name,
    size,
    sha256,
    async read(offset, length) {
      const fh = await open(path, 'r');
      try {
        const buf = Buffer.alloc(length);
        const { bytesRead } = await fh.read(buf, 0, length, offset);
        if (bytesRead !== length) throw new Error(`${path} changed while it was being sent`);
        return new Uint8Array(buf.buffer, buf.byteOffset, length);
      } finally {
        await fh.close();
      }
    },
  };
}
