/**
 * One `ddn receive` per output directory: two runs writing into one directory would append to the same partial
 * files (`.ddn-partial-…`, file-output.ts) and remove each other's parts as stale. A run takes an exclusive lock
 * named after the directory's real path, under `$XDG_STATE_HOME/ddn/receiving` (not in the output directory, which
 * holds only what was received); the operating system releases it when the process ends, however it ends.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { tryExclusiveLock, type ExclusiveFileLock } from '../store/sqlite/exclusive-lock.js';
import { ddnStateDir } from './state-dir.js';

/** Takes the lock of `outputDir` for this run; throws `output_dir_in_use` when another run holds it. */
export function lockOutputDir(env: NodeJS.ProcessEnv, outputDir: string): ExclusiveFileLock {
  const dir = join(ddnStateDir(env), 'receiving');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const real = realpathSync(outputDir);
  const name = createHash('sha256').update(real).digest('hex').slice(0, 32);
  const lock = tryExclusiveLock(join(dir, `${name}.lock`));
  if (lock === null) {
    throw Object.assign(new Error(`another ddn receive is writing into ${real}; wait for it to finish, or give this one its own --output-dir`), {
      code: 'output_dir_in_use',
    });
  }
  return lock;
}
