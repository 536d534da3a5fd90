import type { Context, Next } from 'koa';
import type { Config } from '../shared/config.ts';
import { rateLimit } from '../shared/http/admission.ts';
import { currentUserId } from './session/requireUser.ts';

/**
 * Per-client rate limit of the history routes, whose answers cost the most: anonymous requests
 * count against their client address (as the trusted-proxy rules resolve it) under the strictest
 * limit, signed-in ones against their user.
 */
export function historyRateLimit(config: Config) {
  const anonymous = rateLimit({
    name: 'anonymous history',
    points: config.API_RATE_LIMIT_ANONYMOUS,
    windowSeconds: 60,
    key: (ctx) => ctx.ip,
  });
  const signedIn = rateLimit({
    name: 'history',
    points: config.API_RATE_LIMIT_SIGNED_IN,
    windowSeconds: 60,
    key: (ctx) => String(currentUserId(ctx)),
  });
  return function limitHistory(ctx: Context, next: Next) {
    return currentUserId(ctx) === undefined ? anonymous(ctx, next) : signedIn(ctx, next);
  };
}
