/**
 * A scratch copy of the package as `npm ci` leaves it, for tests that run the real launchers (`npm start`,
 * `npx ddn`, `node bin/ddn.js`) or run ddn outside the checkout: package.json, bin/ddn.js, `dist/` transpiled from
 * src/ by esbuild (file by file, as `npm run build` compiles it), and a node_modules whose `.bin/ddn` links to that
 * bin/ddn.js (as scripts/link-bin.mjs makes it) beside links to this checkout's packages.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sources(p) : n.endsWith('.ts') ? [p] : [];
  });
}

/** Builds the copy in a new temporary directory and returns it (the caller removes it). */
export async function buildDdnPackage(): Promise<string> {
  const pkg = mkdtempSync(join(tmpdir(), 'ddn-package-'));
  copyFileSync(join(ROOT, 'package.json'), join(pkg, 'package.json'));
  mkdirSync(join(pkg, 'bin'));
  copyFileSync(join(ROOT, 'bin', 'ddn.js'), join(pkg, 'bin', 'ddn.js'));
  await build({
    entryPoints: sources(join(ROOT, 'src')),
    outdir: join(pkg, 'dist'),
    outbase: join(ROOT, 'src'),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'error',
  });
  const modules = join(pkg, 'node_modules');
  mkdirSync(join(modules, '.bin'), { recursive: true });
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name !== '.bin') symlinkSync(join(ROOT, 'node_modules', name), join(modules, name));
  }
  symlinkSync(join('..', '..', 'bin', 'ddn.js'), join(modules, '.bin', 'ddn'));
  return pkg;
}
