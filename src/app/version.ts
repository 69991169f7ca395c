/**
 * The version of this build: package.json's `version`, and the git commit when it runs from a checkout
 * (`npx tsx` or a build inside a clone); reported by `ddn --version`, `/health`, the listening line and the
 * first log line.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What this build is. */
export interface BuildInfo {
  readonly version: string;
  /** Short commit hash of the checkout it runs from; absent outside a git checkout. */
  readonly commit?: string;
}

// src/app/version.ts and dist/app/version.js both sit two levels under the package root
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function readVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

function readCommit(): string | undefined {
  if (!existsSync(join(ROOT, '.git'))) return undefined;
  try {
    const out = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 2000 });
    const commit = out.trim();
    return /^[0-9a-f]{7,40}$/.test(commit) ? commit : undefined;
  } catch {
    return undefined;
  }
}

let info: BuildInfo | undefined;

/** This build's version and commit (read once). */
export function buildInfo(): BuildInfo {
  if (info === undefined) {
    const commit = readCommit();
    info = Object.freeze(commit === undefined ? { version: readVersion() } : { version: readVersion(), commit });
  }
  return info;
}

/** `0.1.0` or `0.1.0 (abcdef123456)`. */
export function versionText(b: BuildInfo = buildInfo()): string {
  return b.commit === undefined ? b.version : `${b.version} (${b.commit})`;
}
