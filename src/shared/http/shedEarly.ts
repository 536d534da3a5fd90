import type { Context, Middleware, Next } from 'koa';
import { RateLimitedError, retryAfterValue } from '../errors.ts';
import { httpRequestDuration } from '../metrics.ts';
import type { RateLimit } from './admission.ts';
import { toHttpError } from './errorHandler.ts';
import { requestIdOf } from './requestContext.ts';
import { shedAnswers, type RecordShed } from './shedAnswers.ts';

// A client that does not back off after a 429 fires again at once: refusing it through the whole
// stack (request logger, sessions, cross-site guard, body parser, router, validation, a thrown
// error) costs about as much as serving a cheap route, and every sign-in or snapshot waits in the
// event loop behind hundreds of such refusals. Here a route's own rate limit is read first
// (clientAddress and the security headers only before it), and a client already over it is
// answered at once with a body encoded at start-up. Such refusals are counted (the request
// histogram and shedAnswers.ts), not logged one by one: a flood must not become a
// flood of log lines.

/** A route's rate limit, as the top of the stack can read it. */
export interface EarlyRefusal {
  limit: RateLimit;
  /**
   * The key the request counts against, or undefined when only the full stack can tell (e.g. a
   * session to look up first): such a request goes on, and the route's limit judges it there.
   */
  key(ctx: Context): string | undefined;
  /**
   * The key of a request without cookies, from its client address alone (what `key` gives such a
   * request), for refusing it before Koa (refuseBeforeKoa.ts); absent: only `key` judges.
   */
  cookielessKey?(clientAddress: string): string | undefined;
}

/** Where an early refusal applies: a route's method and path, as the router matches them. */
export interface EarlyRefusalRoute {
  method: string;
  pattern: RegExp;
  /** The route template the request histogram is labelled with (the router's spelling). */
  route: string;
  refusal: EarlyRefusal;
}

interface PreparedRoute extends EarlyRefusalRoute {
  body: Buffer;
  shed: RecordShed;
}

/**
 * Koa middleware answering 429 for requests whose route's limit their client is already over.
 * A refusal passes through `decorate` first (CORS: a page on an allowed origin must be able to
 * read its 429 and Retry-After, as from the full stack).
 */
export function shedEarly(
  service: string,
  routes: EarlyRefusalRoute[],
  decorate: Middleware[] = [],
): Middleware {
  const prepared: PreparedRoute[] = routes.map((route) => ({
    ...route,
    body: refusalBody(route),
    shed: shedAnswers(route.refusal.limit.group, 'rate_limited'),
  }));
  return async function refuseOverLimit(ctx: Context, next: Next) {
    const started = process.hrtime.bigint();
    const route = routeFor(prepared, ctx.method, ctx.path);
    const key = route?.refusal.key(ctx);
    const waitMs = key === undefined ? undefined : await route!.refusal.limit.msUntilAllowed(key);
    if (waitMs === undefined) {
      await next();
      return;
    }
    route!.shed(ctx.req, ctx.res);
    const refuse = async () => {
      ctx.status = 429;
      ctx.set('X-Request-Id', requestIdOf(ctx));
      ctx.set('Retry-After', retryAfterValue(waitMs / 1000));
      ctx.type = 'json';
      ctx.body = route!.body;
    };
    // Each decorating middleware runs with the next one (the refusal last) as its `next`.
    await decorate.reduceRight<() => Promise<void>>(
      (next, middleware) => async () => {
        await middleware(ctx, next);
      },
      refuse,
    )();
    httpRequestDuration.observe(
      { service, method: ctx.method, route: route!.route, status_code: '429' },
      Number(process.hrtime.bigint() - started) / 1e9,
    );
  };
}

/** The error mapper's body for a route's refusal: the same JSON the route's limit answers. */
export function refusalBody(route: EarlyRefusalRoute): Buffer {
  return Buffer.from(
    JSON.stringify(toHttpError(new RateLimitedError(1, route.refusal.limit.refusalMessage)).body),
  );
}

/** The route a request's method and path fall under, as the router matches them (HEAD as GET). */
export function routeFor<Route extends EarlyRefusalRoute>(
  routes: readonly Route[],
  method: string | undefined,
  path: string,
): Route | undefined {
  const asRouted = method === 'HEAD' ? 'GET' : method;
  return routes.find((route) => route.method === asRouted && route.pattern.test(path));
}
