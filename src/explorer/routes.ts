/**
 * The web explorer (docs/explorer.md), served by the Directory: one HTML page for every `/explorer/…` path (the
 * page reads its path and renders that view, so every view has its own address) and the bundle `npm run build`
 * writes with esbuild (scripts/build-explorer.mjs). The page only reads the Directory's public JSON routes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DdnError } from '../base/errors.js';
import { Type, type TSchema } from 'typebox';
import type { HttpServer } from '../http/server.js';
import { asIs, defineRoute, type Route } from '../http/route.js';
import { splitTarget } from '../http/url.js';

/** Where `npm run build` leaves the bundle: `<package>/dist/explorer-bundle/` (this file is two levels below). */
export const EXPLORER_BUNDLE_DIR = fileURLToPath(new URL('../../dist/explorer-bundle/', import.meta.url));

const ASSETS = { 'app.js': 'text/javascript; charset=utf-8', 'app.css': 'text/css; charset=utf-8' } as const;
type AssetName = keyof typeof ASSETS;

/** Deepest explorer path served (`/explorer/policy/application/<id>` has three segments). */
const MAX_DEPTH = 4;

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
};

const escapeAttr = (s: string): string => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The path before the `explorer` segment: the Directory's base path, if it has one. */
function basePathOf(rawUrl: string): string {
  const segs = splitTarget(rawUrl).path.split('/');
  const at = segs.indexOf('explorer');
  return at <= 0 ? '' : segs.slice(0, at).join('/');
}

export function explorerPage(base: string, built: boolean): string {
  const root = `${base}/explorer`;
  const body = built
    ? `<div id="app" data-base="${escapeAttr(root)}" data-api="${escapeAttr(base)}"><p>Loading…</p></div>
<script type="module" src="${escapeAttr(root)}/assets/app.js"></script>`
    : '<main><h1>ddn explorer</h1><p>The explorer bundle is not built: run <code>npm run build</code>.</p></main>';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ddn explorer</title>
<link rel="icon" href="data:,">
${built ? `<link rel="stylesheet" href="${escapeAttr(root)}/assets/app.css">` : ''}
</head>
<body>
${body}
</body>
</html>
`;
}

/** One of the bundle's files. */
const isAssetName = (name: string): name is AssetName => Object.hasOwn(ASSETS, name);

/** A non-JSON answer in the shape the OpenAPI builder takes (a response object with its media types). */
const textAnswer = (description: string, ...mediaTypes: string[]): TSchema =>
  ({ description, content: Object.fromEntries(mediaTypes.map((t) => [t, { schema: Type.String() }])) }) as unknown as TSchema;

/** The explorer's routes (pages at every depth, the bundle's assets); `bundleDir` defaults to {@link EXPLORER_BUNDLE_DIR}. */
export function explorerRoutes(opts: { bundleDir?: string } = {}): Route[] {
  const dir = opts.bundleDir ?? EXPLORER_BUNDLE_DIR;
  // Read once found: a bundle built after the node started is picked up, then served from memory.
  const cache = new Map<AssetName, Buffer>();
  const asset = (name: AssetName): Buffer | undefined => {
    let body = cache.get(name);
    if (body === undefined) {
      try {
        body = readFileSync(join(dir, name));
        cache.set(name, body);
      } catch {
        return undefined;
      }
    }
    return body;
  };

  const page = (url: string): Route =>
    defineRoute({
      method: 'GET',
      url,
      summary: 'The explorer (HTML)',
      tags: ['explorer'],
      answers: { 200: textAnswer('an HTML page', 'text/html') },
      errors: [],
      rateClass: 'read',
      parse: asIs,
      handle: (_input, ctx) => ({
        status: 200 as const,
        body: {},
        payload: explorerPage(basePathOf(ctx.rawUrl), asset('app.js') !== undefined),
        contentType: 'text/html; charset=utf-8',
        headers: { ...SECURITY_HEADERS, 'cache-control': 'no-cache' },
      }),
    });
  const routes = [page('/explorer')];
  let pattern = '/explorer';
  for (let depth = 1; depth <= MAX_DEPTH; depth++) {
    pattern += `/:p${depth}`;
    routes.push(page(pattern));
  }
  routes.push(
    defineRoute({
      method: 'GET',
      url: '/explorer/assets/:file',
      summary: 'An explorer asset (script or style)',
      tags: ['explorer'],
      answers: { 200: textAnswer('the asset', 'text/javascript', 'text/css') },
      errors: [],
      rateClass: 'read',
      parse: ({ params }) => {
        if (!isAssetName(params.file)) throw new DdnError('not_found', 'no such explorer asset');
        return params.file;
      },
      handle: (name) => {
        const body = asset(name);
        if (body === undefined) throw new DdnError('not_found', 'no such explorer asset');
        return {
          status: 200 as const,
          body: {},
          payload: body,
          contentType: ASSETS[name],
          headers: { ...SECURITY_HEADERS, 'cache-control': 'public, max-age=300' },
        };
      },
    }),
  );
  return routes;
}

/** Adds the explorer's routes to `server`. */
export function registerExplorerRoutes(server: HttpServer, opts: { bundleDir?: string } = {}): void {
  server.add(explorerRoutes(opts));
}
