import type { Context, Next } from 'koa';
import { DependencyUnavailableError } from '../errors.ts';
import { abandonRequest } from './requestAbort.ts';

/**
 * Answers 503 when a request has not finished within `ms`: the backstop for a dependency that
 * stops answering without closing its connection. The handler's own work is abandoned, and
 * whatever it sets later is ignored (Koa ignores writes once the response is sent); routes that
 * cancel when abandoned stop their SQL.
 */
export function requestDeadline(ms: number) {
  return async function withDeadline(ctx: Context, next: Next) {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new DependencyUnavailableError(`The request did not finish within ${ms} ms.`);
        abandonRequest(ctx, error);
        reject(error);
      }, ms);
    });
    const work = next();
    // The abandoned handler may still fail later; that must not be an unhandled rejection.
    work.catch(() => {});
    try {
      await Promise.race([work, expired]);
    } finally {
      clearTimeout(timer);
    }
  };
}
