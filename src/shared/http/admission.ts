import type { Context, Next } from 'koa';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { ConcurrencyGate } from '../concurrencyGate.ts';
import { RateLimitedError } from '../errors.ts';
import { requestSignal } from './requestAbort.ts';

// Admission control in front of expensive work: a burst is answered early (503 or 429 with
// Retry-After) instead of queueing into time-outs, while the work admitted keeps its speed.

export interface GateOptions {
  /** Requests doing the work at once. */
  limit: number;
  /** Requests that may wait for a place; more are refused at once. */
  queueLength: number;
  /** Longest wait for a place before being refused (ms). */
  maxWaitMs: number;
}

/** Koa middleware admitting a request to its route, or refusing it (see `routeGate`). */
export type RouteGate = (ctx: Context, next: Next) => Promise<void>;

/**
 * Koa middleware limiting an HTTP route's concurrency, with a short bounded queue; past it a
 * request is refused with OverloadedError (503 with Retry-After). A place is held until the
 * response is over (sent, or its client gone), so a streamed export holds it while it streams,
 * and a wait ends when its client leaves or after `maxWaitMs`.
 */
export function routeGate(name: string, options: GateOptions): RouteGate {
  const gate = new ConcurrencyGate({
    limit: options.limit,
    maxWaiting: options.queueLength,
    retryAfterSeconds: 1,
    busyMessage: (reason) => `Too many ${name} requests at once (${reason}); retry shortly.`,
  });
  return async function admit(ctx: Context, next: Next) {
    const release = await gate.acquire({
      signal: requestSignal(ctx),
      maxWaitMs: options.maxWaitMs,
    });
    const res = ctx.res;
    if (res.writableFinished || res.destroyed) release();
    else res.once('close', release);
    await next();
  };
}

export interface RateLimitOptions {
  /** Requests allowed per window and key; 0 turns the limit off. */
  points: number;
  windowSeconds: number;
  /** The client the request counts against. */
  key: (ctx: Context) => string;
  name: string;
}

/** Koa middleware: at most `points` requests per window per client, else 429 with Retry-After. */
export function rateLimit(options: RateLimitOptions) {
  if (options.points <= 0) {
    return async (_ctx: Context, next: Next) => {
      await next();
    };
  }
  const limiter = new RateLimiterMemory({
    keyPrefix: options.name,
    points: options.points,
    duration: options.windowSeconds,
  });
  return async function limitRate(ctx: Context, next: Next) {
    try {
      await limiter.consume(options.key(ctx));
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        throw new RateLimitedError(
          rejection.msBeforeNext / 1000,
          `Too many ${options.name} requests from this client; see Retry-After.`,
        );
      }
      throw rejection;
    }
    await next();
  };
}
