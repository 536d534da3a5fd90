import type { Context, Next } from 'koa';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { OverloadedError, RateLimitedError } from '../errors.ts';
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

interface Waiter {
  admit: () => void;
}

/**
 * A concurrency limit of an HTTP route with a short bounded queue. Unlike the in-process gate of
 * shared/concurrencyGate.ts, a place is held until the response is over (sent, or its client
 * gone), so a streamed export holds it while it streams, and a wait ends when its client leaves
 * or after `maxWaitMs`.
 */
export class RouteGate {
  private active = 0;
  private readonly queue: Waiter[] = [];
  private readonly name: string;
  private readonly options: GateOptions;

  constructor(name: string, options: GateOptions) {
    this.name = name;
    this.options = options;
  }

  get inUse(): number {
    return this.active;
  }

  /** Koa middleware: admits the request, or throws OverloadedError (503 with Retry-After). */
  readonly middleware = async (ctx: Context, next: Next) => {
    await this.enter(requestSignal(ctx));
    const res = ctx.res;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.leave();
    };
    if (res.writableFinished || res.destroyed) release();
    else res.once('close', release);
    await next();
  };

  private refuse(reason: string): OverloadedError {
    return new OverloadedError(
      1,
      `Too many ${this.name} requests at once (${reason}); retry shortly.`,
    );
  }

  private async enter(signal: AbortSignal): Promise<void> {
    if (this.active < this.options.limit) {
      this.active++;
      return;
    }
    if (this.queue.length >= this.options.queueLength) throw this.refuse('queue full');
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        admit: () => {
          cleanup();
          resolve();
        },
      };
      const give = (error: Error) => {
        const index = this.queue.indexOf(waiter);
        if (index >= 0) this.queue.splice(index, 1);
        cleanup();
        reject(error);
      };
      const timer = setTimeout(() => give(this.refuse('waited too long')), this.options.maxWaitMs);
      const onAbort = () => give(this.refuse('client gone'));
      const cleanup = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      signal.addEventListener('abort', onAbort);
      this.queue.push(waiter);
    });
  }

  private leave() {
    const next = this.queue.shift();
    // The place passes straight to the next waiter: `active` stays as it is.
    if (next) next.admit();
    else this.active--;
  }
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
