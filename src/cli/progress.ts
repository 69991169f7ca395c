/** A one-line progress bar on stderr, drawn only when stderr is a terminal. */
import type { CliIo } from './io.js';

/** Updates and finishes one progress line. */
export interface Progress {
  update(done: number, total: number, note?: string): void;
  finish(): void;
}

function mib(n: number): string {
  return (n / 1_048_576).toFixed(1);
}

/** A progress bar when `io.stderrIsTTY`, otherwise a no-op (logs and pipes stay clean). */
export function progressBar(io: CliIo, label: string, width = 30): Progress {
  if (io.stderrIsTTY !== true) return { update: () => {}, finish: () => {} };
  let drawn = false;
  return {
    update(done, total, note) {
      const ratio = total === 0 ? 1 : Math.min(done / total, 1);
      const filled = Math.round(ratio * width);
      const bar = `${'#'.repeat(filled)}${'-'.repeat(width - filled)}`;
      io.stderr(`\r${label} [${bar}] ${Math.floor(ratio * 100)}% ${mib(done)}/${mib(total)} MiB${note ? ` ${note}` : ''}`);
      drawn = true;
    },
    finish() {
      if (drawn) io.stderr('\n');
      drawn = false;
    },
  };
}
