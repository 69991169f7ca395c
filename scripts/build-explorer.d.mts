/** Types of scripts/build-explorer.mjs (the explorer tests build the bundle with it). */
export declare const DEFAULT_OUT_DIR: string;
/** Bundles src/explorer/ui into `outDir` (app.js, app.css); resolves to `outDir`. */
export declare function buildExplorer(outDir?: string): Promise<string>;
