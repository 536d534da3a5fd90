import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import { ForbiddenError } from '../../shared/errors.ts';

// Defence against cross-site requests riding on the session cookie (OWASP CSRF cheat sheet):
//  1. every state-changing /api request (non-GET, and GET logout) must come from our own origin
//     or an allowed one, judged from the browser-set Sec-Fetch-Site and Origin headers; requests
//     with neither come from non-browser clients, which a forged page cannot drive;
//  2. JSON routes refuse other media types (415, in the route registry), so a foreign page
//     cannot post JSON without a CORS preflight, which only the allowed origins pass;
//  3. the multipart upload, which a foreign form could send as a "simple" request, also needs
//     the synchronizer token: `X-CSRF-Token` equal to the `csrf-token` cookie (readable by the
//     page's script, created at sign-in and bound to the session, kept server-side in it).

export const CSRF_COOKIE = 'csrf-token';
export const CSRF_HEADER = 'X-CSRF-Token';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const STATE_CHANGING_GETS = new Set(['/api/authorize/logout']);

/**
 * The path as the guard judges it: decoded, lower-case, repeated and trailing slashes dropped.
 * Judging a wider set of spellings than the router accepts means no spelling the router maps to
 * a state-changing route (`/API/…`, `/…/LOGOUT`, `/…/logout/`) slips past the guard.
 */
export function guardedPath(rawPath: string): string {
  let path = rawPath;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    // Malformed escapes: judge the raw spelling (the router will not match it either).
  }
  const collapsed = path.toLowerCase().replace(/\/{2,}/g, '/');
  return collapsed.length > 1 ? collapsed.replace(/\/+$/, '') : collapsed;
}

function changesState(ctx: Context, path: string): boolean {
  return !SAFE_METHODS.has(ctx.method) || STATE_CHANGING_GETS.has(path);
}

/** Why a state-changing request is refused, or undefined when it may proceed. */
function crossSiteRefusal(ctx: Context, allowed: ReadonlySet<string>): string | undefined {
  const site = ctx.get('sec-fetch-site');
  if (site === 'same-origin' || site === 'none') return undefined;
  const origin = ctx.get('origin');
  if (origin) {
    // Koa 3's ctx.origin is the request's Origin header; our own origin is built here.
    if (origin === `${ctx.protocol}://${ctx.host}` || allowed.has(origin)) return undefined;
    return `origin ${origin} is not allowed`;
  }
  // Neither header: not a browser, so no page can have forged it.
  return site ? `Sec-Fetch-Site: ${site}` : undefined;
}

export function crossSiteGuard(allowedOrigins: readonly string[]) {
  const allowed = new Set(allowedOrigins);
  return async function refuseCrossSite(ctx: Context, next: Next) {
    const path = guardedPath(ctx.path);
    if (path.startsWith('/api/') && changesState(ctx, path)) {
      const refusal = crossSiteRefusal(ctx, allowed);
      if (refusal) {
        throw new ForbiddenError(`Cross-site request refused (${refusal})`, 'cross_site_request');
      }
    }
    await next();
  };
}

/** Gives the signed-in session its token (once) and hands it to the page as cookie and header. */
export function issueCsrfToken(ctx: Context, maxAgeMs: number): string {
  const session = ctx.session;
  if (!session) throw new Error('issueCsrfToken needs the session middleware');
  session.csrf ??= randomBytes(32).toString('base64url');
  ctx.cookies.set(CSRF_COOKIE, session.csrf, {
    httpOnly: false,
    sameSite: 'lax',
    signed: false,
    overwrite: true,
    path: '/',
    maxAge: maxAgeMs,
  });
  ctx.set(CSRF_HEADER, session.csrf);
  return session.csrf;
}

export function clearCsrfCookie(ctx: Context) {
  ctx.cookies.set(CSRF_COOKIE, '', {
    httpOnly: false,
    sameSite: 'lax',
    signed: false,
    overwrite: true,
    path: '/',
    expires: new Date(0),
  });
}

function sameToken(sent: string, expected: string): boolean {
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The synchronizer-token check of the upload. A browser request (one carrying Origin or
 * Sec-Fetch-Site) must send the token; a token that is sent must match, whoever sends it.
 */
export async function requireCsrfToken(ctx: Context, next: Next) {
  const sent = ctx.get(CSRF_HEADER);
  const expected = ctx.session?.csrf;
  if (sent && (!expected || !sameToken(sent, expected))) {
    throw new ForbiddenError(
      `The ${CSRF_HEADER} header does not match this session's token`,
      'csrf_token_invalid',
    );
  }
  if (!sent && (ctx.get('origin') || ctx.get('sec-fetch-site'))) {
    throw new ForbiddenError(
      `Send the value of the ${CSRF_COOKIE} cookie in the ${CSRF_HEADER} header`,
      'csrf_token_missing',
    );
  }
  await next();
}
