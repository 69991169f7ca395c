/** Where `ddn receive` writes files: a directory, never replacing an existing file. */
import { open } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { FileSink } from '../client/file-receiver.js';
import type { AssembledFile } from '../protocol/file-assembly.js';

/** The sender's name when it is a plain file name; otherwise `<key>.bin`. */
export function safeFileName(name: string, key: string): string {
  const plain = name !== '' && name !== '.' && name !== '..' && !/[/\\\0]/.test(name) && !name.startsWith('.');
  return plain ? name : `${key}.bin`;
}

async function writeNew(path: string, data: Uint8Array): Promise<boolean> {
  let fh;
  try {
    fh = await open(path, 'wx', 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  return true;
}

/**
 * A sink writing into `dir`: the sender's file name, or `<stem>-<key><ext>` when that name is taken; durable
 * (fsync) before the receiver acknowledges anything.
 */
export function directorySink(dir: string): FileSink {
  return async (file: AssembledFile, key: string) => {
    const name = safeFileName(file.name, key);
    const ext = extname(name);
    for (const candidate of [name, `${name.slice(0, name.length - ext.length)}-${key}${ext}`]) {
      const path = join(dir, candidate);
      if (await writeNew(path, file.data)) return path;
    }
    throw Object.assign(new Error(`${join(dir, name)} and its alternative name exist; not overwriting`), { code: 'output_exists' });
  };
}
