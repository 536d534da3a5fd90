import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type Router from '@koa/router';
import type { Context } from 'koa';

// The web dashboard: a few static files from src/api/public, plus lightweight-charts and the currency icons
// (cryptocurrency-icons) from node_modules (no CDN). Everything is read once at start, answered with an ETag and `no-cache` (the browser
// revalidates and gets a 304 while nothing changed), and under a strict Content-Security-Policy:
// scripts and styles from our own origin only, no inline code.

const PUBLIC_DIR = fileURLToPath(new URL('./public/', import.meta.url));
const require = createRequire(import.meta.url);
// The standalone build bundles its one dependency (fancy-canvas): a browser imports it as is.
const CHARTS = path.join(
  path.dirname(require.resolve('lightweight-charts/package.json')),
  'dist',
  'lightweight-charts.standalone.production.mjs',
);
const ICON_DIR = path.join(
  path.dirname(require.resolve('cryptocurrency-icons/package.json')),
  'svg',
  'color',
);
/** Where the `logoUrl` of every currency points (the data module names it). */
const LOGO_ROUTE = '/assets/cryptofont/:file';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

function asset(file: string): Asset {
  const body = readFileSync(file);
  return {
    body,
    type: TYPES[path.extname(file)] ?? 'application/octet-stream',
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
  };
}

/** URL path → file, the whole dashboard. */
function dashboardAssets(): Map<string, Asset> {
  const inPublic = (name: string) => path.join(PUBLIC_DIR, name);
  return new Map([
    ['/', asset(inPublic('index.html'))],
    ['/app/app.js', asset(inPublic('app.js'))],
    ['/app/api.js', asset(inPublic('api.js'))],
    ['/app/chart.js', asset(inPublic('chart.js'))],
    ['/app/format.js', asset(inPublic('format.js'))],
    ['/app/flash.js', asset(inPublic('flash.js'))],
    ['/app/markets.js', asset(inPublic('markets.js'))],
    ['/app/notices.js', asset(inPublic('notices.js'))],
    ['/app/portfolio.js', asset(inPublic('portfolio.js'))],
    ['/app/styles.css', asset(inPublic('styles.css'))],
    ['/app/favicon.svg', asset(inPublic('favicon.svg'))],
    ['/app/vendor/lightweight-charts.mjs', asset(CHARTS)],
  ]);
}

/**
 * `btc.svg` → the set's colour icon of BTC; a code the set lacks gets its generic coin, so every
 * `logoUrl` shows a picture. Read on first use (hundreds of files, few of them ever asked for).
 */
function currencyIcons() {
  const known = new Set(readdirSync(ICON_DIR).filter((name) => name.endsWith('.svg')));
  const cache = new Map<string, Asset>();
  return (file: string): Asset | undefined => {
    const name = file.toLowerCase();
    if (!/^[a-z0-9$]{1,20}\.svg$/.test(name)) return undefined;
    const source = known.has(name) ? name : 'generic.svg';
    let found = cache.get(source);
    if (!found) {
      found = asset(path.join(ICON_DIR, source));
      cache.set(source, found);
    }
    return found;
  };
}

function send(ctx: Context, found: Asset, cacheControl: string) {
  ctx.set('Content-Security-Policy', DASHBOARD_CSP);
  ctx.set('Cache-Control', cacheControl);
  ctx.set('ETag', found.etag);
  if (ctx.get('if-none-match') === found.etag) {
    ctx.status = 304;
    return;
  }
  ctx.type = found.type;
  ctx.body = found.body;
}

export function mountDashboard(router: Router) {
  const assets = dashboardAssets();
  const serve = (ctx: Context) => {
    const found = assets.get(ctx.path);
    if (found) send(ctx, found, 'no-cache');
  };
  for (const route of assets.keys()) router.get(route, serve);
  const icon = currencyIcons();
  router.get(LOGO_ROUTE, (ctx) => {
    const found = icon(String(ctx.params.file));
    // Unknown names fall through to the API's 404.
    if (found) send(ctx, found, 'public, max-age=86400');
  });
}
