import type { Context, Next } from 'koa';
import type { Config } from '../shared/config.ts';
import { rateLimit } from '../shared/http/admission.ts';
import type { EarlyRefusal } from '../shared/http/shedEarly.ts';
import { currentUserId } from './session/requireUser.ts';
import { SESSION_COOKIE } from './session/sessionMiddleware.ts';

/**
 * Per-client rate limit of the history routes, whose answers cost the most: anonymous requests
 * count against their client address (as the trusted-proxy rules resolve it) under the strictest
 * limit, signed-in ones against their user. `anonymousOverLimit` reads the anonymous limit at the
 * top of the stack, so a flood from one address is refused before its session is looked up.
 */
export function historyRateLimit(config: Config) {
  const anonymous = rateLimit({
    name: 'anonymous history',
    points: config.API_RATE_LIMIT_ANONYMOUS,
    windowSeconds: 60,
    key: (ctx) => ctx.ip,
  });
  const signedIn = rateLimit({
    name: 'signed-in history',
    points: config.API_RATE_LIMIT_SIGNED_IN,
    windowSeconds: 60,
    key: (ctx) => String(currentUserId(ctx)),
  });
  const anonymousOverLimit: EarlyRefusal = {
    limit: anonymous,
    // Only a validly signed session cookie can belong to a user (a forged or stale one fails the
    // signature check here): such a request is judged after its session is read.
    key: (ctx) =>
      ctx.cookies.get(SESSION_COOKIE, { signed: true }) === undefined ? ctx.ip : undefined,
    // Without cookies there is no session: anonymous.
    cookielessKey: (clientAddress) => clientAddress,
  };
  function limitHistory(ctx: Context, next: Next) {
    return currentUserId(ctx) === undefined ? anonymous(ctx, next) : signedIn(ctx, next);
  }
  return { limitHistory, anonymousOverLimit };
}
