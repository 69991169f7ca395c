/** Types of scripts/run-dirs.mjs (test/bench/run-dirs.test.ts). */
export function runDir(parent: string, prefix: string, pid?: number): string;
export function processAlive(pid: number): boolean;
export function removeStaleRunDirs(parent: string, prefix: string, o?: { alive?: (pid: number) => boolean; nowMs?: number }): string[];
