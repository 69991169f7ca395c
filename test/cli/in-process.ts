/** Runs `ddn` in-process through `main()` with a captured io, for tests that need no child process. */
import assert from 'node:assert/strict';
import type { CliIo } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';

/** A finished command: exit code, stderr and its one JSON result. */
export interface InProcessRun {
  code: number;
  stderr: string;
  json: Record<string, unknown>;
}

/** `run` (any exit code) and `ok` (exit 0, its JSON) of `ddn …args` with the environment `env()` gives. */
export function inProcess(env: () => NodeJS.ProcessEnv): {
  run(args: string[]): Promise<InProcessRun>;
  ok(args: string[]): Promise<Record<string, unknown>>;
} {
  const run = async (args: string[]): Promise<InProcessRun> => {
    let out = '';
    let err = '';
    const io: CliIo = {
      env: env(),
      stdout: (t) => void (out += t),
      stderr: (t) => void (err += t),
      shutdownSignal: () => new Promise<NodeJS.Signals>(() => {}),
    };
    const code = await main(args, io);
    const lines = out.split('\n').filter((l) => l !== '');
    assert.equal(lines.length, 1, `one JSON line from ddn ${args.join(' ')}:\n${out}\n${err}`);
    return { code, stderr: err, json: JSON.parse(lines[0]!) as Record<string, unknown> };
  };
  const ok = async (args: string[]): Promise<Record<string, unknown>> => {
    const r = await run(args);
    assert.equal(r.code, 0, `ddn ${args.join(' ')}:\n${r.stderr}`);
    return r.json;
  };
  return { run, ok };
}
