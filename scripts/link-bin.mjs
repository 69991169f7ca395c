#!/usr/bin/env node
// npm does not link a project's own `bin` into its node_modules/.bin; this does, so `npx ddn …` runs this
// checkout's command right after `npm ci` (run from the `prepare` script).
import { chmodSync, existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';

const binDir = join('node_modules', '.bin');
if (existsSync('node_modules')) {
  mkdirSync(binDir, { recursive: true });
  const link = join(binDir, 'ddn');
  rmSync(link, { force: true });
  symlinkSync(join('..', '..', 'bin', 'ddn.js'), link);
  chmodSync(join('bin', 'ddn.js'), 0o755);
}
