/**
 * Files on disk for {@link sendFile} and {@link FileReceiver}: a path as a {@link FileSource} (hashed once, then
 * read part by part, so a large file is never held in memory whole), bytes in memory as one, and a directory as
 * a {@link FileSink} that writes each file into a hidden partial file, makes it durable and only then gives it
 * its name, never replacing an existing file.
 */
import { errorCodeOf } from '../base/guards.js';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { link, open, stat, unlink, type FileHandle } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import type { FileSink, FileWriter } from './file-receiver.js';
import type { FileSource } from './file-sender.js';

/**
 * The file at `path` as a {@link FileSource} named `name` (default: the path's last segment). The size is checked
 * again at each read: a file that shrinks while it is sent fails the send.
 */
export async function fileSource(path: string, name = basename(path)): Promise<FileSource> {
  const s = await stat(path);
  if (!s.isFile()) throw Object.assign(new Error(`${path} is not a regular file`), { code: 'not_a_file' });
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return {
    name,
    size: s.size,
    sha256: new Uint8Array(hash.digest()),
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

/** Bytes in memory as a {@link FileSource} named `name`. */
export function bytesSource(name: string, data: Uint8Array): FileSource {
  return {
    name,
    size: data.length,
    sha256: new Uint8Array(createHash('sha256').update(data).digest()),
    read: async (offset, length) => data.slice(offset, offset + length),
  };
}

/** The sender's name when it is a plain file name; otherwise `<key>.bin`. */
function plainName(name: string, key: string): string {
  const plain = name !== '' && name !== '.' && name !== '..' && !/[/\\\0]/.test(name) && !name.startsWith('.');
  return plain ? name : `${key}.bin`;
}

/**
 * A {@link FileSink} writing into the directory `dir`: each file under the sender's name (or
 * `<stem>-<message key><ext>` when that name is taken; `<message key>.bin` when the name is not a plain file
 * name), made durable (fsync) before the receiver acknowledges it. A file that fails half-way leaves nothing.
 */
export function directorySink(dir: string): FileSink {
  return async (file, key): Promise<FileWriter> => {
    const name = plainName(file.name, key);
    const partial = join(dir, `.ddn-partial-${randomBytes(6).toString('hex')}`);
    const fh: FileHandle = await open(partial, 'wx', 0o600);
    let closed = false;
    const close = async (): Promise<void> => {
      if (!closed) await fh.close();
      closed = true;
    };
    return {
      async write(data) {
        await fh.write(data);
      },
      async commit() {
        try {
          await fh.sync();
          await close();
          const ext = extname(name);
          for (const candidate of [name, `${name.slice(0, name.length - ext.length)}-${key}${ext}`]) {
            const path = join(dir, candidate);
            try {
              await link(partial, path);
              return path;
            } catch (e) {
              if (errorCodeOf(e) !== 'EEXIST') throw e;
            }
          }
          throw Object.assign(new Error(`${join(dir, name)} and its alternative name exist; not overwriting`), { code: 'output_exists' });
        } finally {
          await unlink(partial).catch(() => undefined);
        }
      },
      async abort() {
        await close();
        await unlink(partial).catch(() => undefined);
      },
    };
  };
}
