/** The `--input` of `ddn send`: a file read part by part, or standard input (`-`) read into memory. */
import { messageOf } from '../base/guards.js';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { bytesSource, fileSource as sdkFileSource } from '../client/file-io.js';
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
  return bytesSource(name, new Uint8Array(await readAll(stdin)));
}

/**
 * A file as a {@link FileSource} (the SDK's: hashed once up front, then read part by part); a path that is not a
 * readable regular file is a usage error.
 */
export async function fileSource(path: string, name = basename(path)): Promise<FileSource> {
  try {
    const s = await stat(path);
    if (!s.isFile()) throw new Error('not a regular file');
  } catch (e) {
    throw new UsageError(`cannot read ${path}: ${messageOf(e)}`);
  }
  return sdkFileSource(path, name);
}
