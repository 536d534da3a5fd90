import cors from '@koa/cors';
import type { Context, Middleware } from 'koa';
import { CSRF_HEADER } from './csrf.ts';

/**
 * CORS for the web clients listed in API_ALLOWED_ORIGINS (and no one else): they may call the
 * API with the session cookie and read the answers, the CSRF header included. Other origins get
 * no CORS headers, so browsers keep them from reading anything.
 */
export function corsForAllowedOrigins(origins: readonly string[]): Middleware {
  const allowed = new Set(origins);
  return cors({
    origin: (ctx: Context) => (allowed.has(ctx.get('origin')) ? ctx.get('origin') : ''),
    credentials: true,
    allowMethods: ['GET', 'HEAD', 'POST'],
    allowHeaders: ['Content-Type', CSRF_HEADER, 'X-Request-Id'],
    exposeHeaders: [CSRF_HEADER, 'X-Request-Id', 'Retry-After'],
    maxAge: 600,
  });
}
