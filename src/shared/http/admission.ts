import type { Context, Next } from 'koa';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import {
  ConcurrencyGate,
  GateRefusedError,
  type GateRefusal,
  type ReleasePlace,
} from '../concurrencyGate.ts';
import { RateLimitedError } from '../errors.ts';
import { requestSignal } from './requestAbort.ts';
import { gateShedAnswers, shedAnswers, type GateShedReason } from './shedAnswers.ts';

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
 * request is refused with GateRefusedError (503 with Retry-After), recorded as a shed answer. A
 * place is held until the response is over (sent, or its client gone), so a streamed export holds
 * it while it streams, and a wait ends when its client leaves or after `maxWaitMs`.
 */
export function routeGate(name: string, options: GateOptions): RouteGate {
  const gate = new ConcurrencyGate({
    limit: options.limit,
    maxWaiting: options.queueLength,
    retryAfterSeconds: 1,
    busyMessage: (reason) => `Too many ${name} requests at once (${reason}); retry shortly.`,
  });
  const shed = gateShedAnswers(name);
  return async function admit(ctx: Context, next: Next) {
    let release: ReleasePlace;
    try {
      release = await gate.acquire({ signal: requestSignal(ctx), maxWaitMs: options.maxWaitMs });
    } catch (error) {
      if (error instanceof GateRefusedError) shed[SHED_REASONS[error.reason]](ctx.req, ctx.res);
      throw error;
    }
    const res = ctx.res;
    if (res.writableFinished || res.destroyed) release();
    else res.once('close', release);
    await next();
  };
}

const SHED_REASONS: Record<GateRefusal, GateShedReason> = {
  'queue full': 'queue_full',
  'waited too long': 'waited_too_long',
  'client gone': 'client_gone',
};

export interface RateLimitOptions {
  /** Requests allowed per window and key; 0 turns the limit off. */
  points: number;
  windowSeconds: number;
  /** The client the request counts against. */
  key: (ctx: Context) => string;
  /** The route group, in the refusal's message and the shed counter. */
  name: string;
}

/** Koa middleware counting a request against its client's rate (see `rateLimit`). */
export interface RateLimit {
  (ctx: Context, next: Next): Promise<void>;
  /** The route group it limits (its `name`), as the shed counter labels it. */
  readonly group: string;
  /** The message of this limit's refusals. */
  readonly refusalMessage: string;
  /**
   * Without counting a request: the milliseconds until `key` may make one again when it is over
   * the limit now, else undefined (the answer the middleware would give, read ahead of it).
   */
  msUntilAllowed(key: string): Promise<number | undefined>;
}

/** Koa middleware: at most `points` requests per window per client, else 429 with Retry-After. */
export function rateLimit(options: RateLimitOptions): RateLimit {
  const refusalMessage = `Too many ${options.name} requests from this client; see Retry-After.`;
  const shed = shedAnswers(options.name, 'rate_limited');
  if (options.points <= 0) {
    const unlimited = async (_ctx: Context, next: Next) => {
      await next();
    };
    return withReading(unlimited, async () => undefined);
  }
  const limiter = new RateLimiterMemory({
    keyPrefix: options.name,
    points: options.points,
    duration: options.windowSeconds,
  });
  async function limitRate(ctx: Context, next: Next) {
    try {
      await limiter.consume(options.key(ctx));
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        shed(ctx.req, ctx.res);
        throw new RateLimitedError(rejection.msBeforeNext / 1000, refusalMessage);
      }
      throw rejection;
    }
    await next();
  }
  // Past the limit, a consume only raises the count: the window ends when it would have, so a
  // request refused on this reading is refused exactly as `limitRate` would refuse it.
  async function msUntilAllowed(key: string): Promise<number | undefined> {
    const state = await limiter.get(key);
    return state && state.consumedPoints >= options.points ? state.msBeforeNext : undefined;
  }
  return withReading(limitRate, msUntilAllowed);

  function withReading(
    middleware: (ctx: Context, next: Next) => Promise<void>,
    reading: RateLimit['msUntilAllowed'],
  ): RateLimit {
    return Object.defineProperties(middleware, {
      group: { value: options.name },
      refusalMessage: { value: refusalMessage },
      msUntilAllowed: { value: reading },
    }) as RateLimit;
  }
}
