/**
 * A small disk for storage-exhaustion tests. Where the machine allows it (root, as CI here), a real tmpfs of the
 * given size is mounted in a temp dir and unmounted after: SQLite then meets a real full disk (`SQLITE_FULL`,
 * ENOSPC). Elsewhere, a plain temp dir stands in for it with an **injected** size: the node is told the disk's free
 * space as that size minus what the dir holds (`NodeOverrides.freeSpace`), which makes it refuse new data exactly as
 * on a full disk, without SQLite ever failing. Which of the two runs is detected once ({@link diskMode}); tests put
 * it in their names (`DDN_TEST_DISK=injected` forces the injected one). A ballast file fills the disk and is
 * deleted to "return space".
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { statfsFree, type FreeSpace } from '../../src/store/storage-guard.js';

export type DiskMode = 'tmpfs' | 'injected';

let detected: DiskMode | undefined;

/** `tmpfs` when a tmpfs can be mounted here (tried once), else `injected`. */
export function diskMode(): DiskMode {
  if (detected !== undefined) return detected;
  if (process.env.DDN_TEST_DISK === 'injected') return (detected = 'injected');
  const probe = mkdtempSync(join(tmpdir(), 'ddn-mount-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { stdio: 'ignore' });
    execFileSync('umount', [probe], { stdio: 'ignore' });
    detected = 'tmpfs';
  } catch {
    detected = 'injected';
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
  return detected;
}

export interface SmallDisk {
  readonly mode: DiskMode;
  /** A data directory on the disk. */
  readonly dataDir: string;
  /** What the node is told of free space (injected mode only; a tmpfs is measured as any disk). */
  readonly freeSpace: FreeSpace | undefined;
  /** Free bytes now. */
  free(): number;
  /** Adds ballast until only `leaveBytes` are free. */
  fill(leaveBytes: number): void;
  /** Adds ballast until not a page is free. */
  fillAll(): void;
  /** Deletes the ballast. */
  removeBallast(): void;
  /** Unmounts (tmpfs) and deletes everything. */
  close(): void;
}

/** Bytes a directory tree takes on disk. */
function usedBytes(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    total += e.isDirectory() ? usedBytes(p) : statSync(p).blocks * 512;
  }
  return total;
}

/** Appends `bytes` to `path` in pages; stops early (no error) when the disk is full. */
function appendUpTo(path: string, bytes: number): void {
  const fd = openSync(path, 'a');
  const page = Buffer.alloc(64 * 1024, 0xab);
  try {
    for (let left = bytes; left > 0;) {
      const n = Math.min(left, page.length);
      writeSync(fd, page, 0, n);
      left -= n;
    }
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
}

/** A disk of `sizeBytes` (see the module comment). */
export function smallDisk(sizeBytes: number): SmallDisk {
  const mode = diskMode();
  const root = mkdtempSync(join(tmpdir(), 'ddn-small-disk-'));
  if (mode === 'tmpfs') execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes}`, 'tmpfs', root]);
  const dataDir = join(root, 'data');
  mkdirSync(dataDir);
  const ballast = join(root, 'ballast');
  const freeSpace: FreeSpace | undefined = mode === 'tmpfs' ? undefined : () => Math.max(0, sizeBytes - usedBytes(root));
  const free = (): number => (freeSpace ?? statfsFree)(root);
  return {
    mode,
    dataDir,
    freeSpace,
    free,
    fill(leaveBytes) {
      appendUpTo(ballast, free() - leaveBytes);
    },
    fillAll() {
      appendUpTo(ballast, free());
      // the page-sized remainder a 64 KiB write could not take
      for (let i = 0; i < 16 && free() > 0; i++) appendUpTo(ballast, 4096);
    },
    removeBallast() {
      rmSync(ballast, { force: true });
    },
    close() {
      // lazily when busy: a failed test may have left a file open, and no mount may outlive the tests
      if (mode === 'tmpfs') execFileSync('umount', ['-l', root]);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
