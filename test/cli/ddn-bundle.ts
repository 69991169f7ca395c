/**
 * The `ddn` command built into one JavaScript file (esbuild; packages stay external), for tests that measure the
 * command's own memory: the tsx loader the other CLI tests run under would count ~130 MiB of its own. The file
 * goes under `dist/` (git-ignored) so that the packages resolve from the repository's node_modules.
 */
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Builds `ddn` and resolves with the entry file and a function removing it. Split at dynamic imports, as the
 * command runs from dist/: the server commands (and fastify, the stores) load only when they run.
 */
export async function bundleDdn(): Promise<{ entry: string; remove(): void }> {
  const dir = `${ROOT}dist/test-bundles/ddn-${process.pid}`;
  await build({
    entryPoints: { ddn: `${ROOT}src/cli/entry-dev.ts` },
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outdir: dir,
    outExtension: { '.js': '.mjs' },
    logLevel: 'error',
  });
  return { entry: `${dir}/ddn.mjs`, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
