#!/usr/bin/env node
// The `ddn` command: runs the compiled CLI (built by `npm ci` through the `prepare` script).
import { main } from '../dist/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => { if (typeof code === 'number') process.exitCode = code; },
  (err) => { process.stderr.write(`${err instanceof Error ? err.stack ?? err.message : String(err)}\n`); process.exitCode = 1; },
);
