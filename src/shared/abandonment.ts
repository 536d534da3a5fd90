import { AsyncLocalStorage } from 'node:async_hooks';
import { AppError } from './errors.ts';

// Work done for a request whose client has gone (or whose deadline passed) is wasted and holds a
// database connection others wait for. A route that opts in runs inside a scope carrying its
// request's abort signal; the database driver (shared/db/pool.ts) cancels that scope's running
// queries and the data client (api/dataClient.ts) its calls when the signal fires.

const scope = new AsyncLocalStorage<AbortSignal>();

/** Runs `work` so that every query and data-module call it starts stops when `signal` aborts. */
export function runAbandonable<T>(signal: AbortSignal, work: () => T): T {
  return scope.run(signal, work);
}

/** The abort signal of the abandonable request this code runs for, if any. */
export function abandonmentSignal(): AbortSignal | undefined {
  return scope.getStore();
}

/** Thrown into work of an abandoned request (a 503 nobody reads, never a 500 in the metrics). */
export class RequestAbandonedError extends AppError {
  constructor(cause?: unknown) {
    super(503, 'request_abandoned', 'The request was abandoned (client gone or deadline passed).', {
      cause,
    });
  }
}
