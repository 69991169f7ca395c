/** Development entry of the `ddn` command (`node --import tsx src/cli/entry-dev.ts …`), like bin/ddn.js without a build. */
import { main } from './main.js';

main(process.argv.slice(2)).then(
  (code) => {
    // an interrupted command (130, 143) exits now, whatever requests it left in flight
    if (code >= 128) process.exit(code);
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
