/**
 * A scratch copy of the package as `npm ci` leaves it, for tests that run the real launchers (`npm start`,
 * `npx ddn`, `node bin/ddn.js`) or run ddn outside the checkout: package.json, bin/ddn.js, `dist/` transpiled from
 * src/ by esbuild (file by file, as `npm run build` compiles it), and a node_modules whose `.bin/ddn` links to that
 * bin/ddn.js (as scripts/link-bin.mjs makes it) beside links to this checkout's packages.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
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
  // Without its `bin`: with it, npx installs the project itself into its cache to link that bin, which fails on a
  // node_modules of links; the copy's `.bin/ddn` (below) is what scripts/link-bin.mjs makes in a checkout.
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
  delete manifest.bin;
  writeFileSync(join(pkg, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
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
