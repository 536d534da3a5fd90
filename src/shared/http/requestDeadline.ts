import type { Context, Next } from 'koa';
import { DependencyUnavailableError } from '../errors.ts';

/**
 * Answers 503 when a request has not finished within `ms`: the backstop for a dependency that
 * stops answering without closing its connection. The handler's own work is abandoned, and
 * whatever it sets later is ignored (Koa ignores writes once the response is sent).
 */
export function requestDeadline(ms: number) {
  return async function withDeadline(_ctx: Context, next: Next) {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new DependencyUnavailableError(`The request did not finish within ${ms} ms.`)),
        ms,
      );
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
