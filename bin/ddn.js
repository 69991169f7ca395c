#!/usr/bin/env node
// The `ddn` command: runs the compiled CLI (built by `npm ci` through the `prepare` script).
import { main } from '../dist/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => {
    // an interrupted command (130, 143) exits now, whatever requests it left in flight
    if (code >= 128) process.exit(code);
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
