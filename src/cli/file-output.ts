/**
 * Where `ddn receive` writes files: a directory, never replacing an existing file. Each file is written part by
 * part into a hidden partial file beside its destination, made durable (fsync), and only then linked under its
 * final name — a file that fails half-way leaves nothing behind under any name.
 */
import { randomBytes } from 'node:crypto';
import { link, open, unlink, type FileHandle } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { FileSink, FileWriter } from '../client/file-receiver.js';
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
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
}

/**
 * A sink writing into `dir`: the sender's file name, or `<stem>-<key><ext>` when that name is taken; durable
 * (fsync) before the receiver acknowledges anything.
 */
export function directorySink(dir: string): FileSink {
  return async (file: FileHeader, key: string): Promise<FileWriter> => {
    const name = safeFileName(file.name, key);
    const partial = join(dir, `.ddn-partial-${randomBytes(6).toString('hex')}`);
    const fh: FileHandle = await open(partial, 'wx', 0o600);
    let open_ = true;
    const close = async (): Promise<void> => {
      if (open_) await fh.close();
      open_ = false;
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
            if (await linkNew(partial, path)) return path;
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
