#!/usr/bin/env node
// Bundles the web explorer (src/explorer/ui, preact) with esbuild into dist/explorer-bundle/, which the Directory
// serves at /explorer/assets/ (src/explorer/routes.ts). Run by `npm run build`; the explorer tests call it too.
// Usage: node scripts/build-explorer.mjs [out-dir]
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_OUT_DIR = join(root, 'dist', 'explorer-bundle');

/** Writes `app.js` and `app.css` into `outDir`. */
export async function buildExplorer(outDir = DEFAULT_OUT_DIR) {
  mkdirSync(outDir, { recursive: true });
  await build({
    absWorkingDir: root,
    entryPoints: [join(root, 'src/explorer/ui/main.tsx')],
    outfile: join(outDir, 'app.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2020'],
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: join(root, 'tsconfig.explorer.json'),
    logLevel: 'warning',
  });
  copyFileSync(join(root, 'src/explorer/ui/app.css'), join(outDir, 'app.css'));
  return outDir;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = await buildExplorer(process.argv[2] ? resolve(process.argv[2]) : DEFAULT_OUT_DIR);
  console.log(`explorer bundle: ${out}`);
}
