import { AsyncLocalStorage } from 'node:async_hooks';
import type { Middleware } from 'koa';

// Some deployed clients (the analysis service's training sessions) send naive local times of
// the host they run on. DATA_NAIVE_TIME_ZONE names that zone; each request of the data module
// carries it, so the request schemas (module constants, shared with the OpenAPI document) read
// zone-less timestamps in the configured zone without a process-wide setting.

const naiveZone = new AsyncLocalStorage<string>();

/** Runs the rest of the request with `timeZone` as the zone of zone-less timestamps. */
export function naiveTimeZone(timeZone: string): Middleware {
  return (_ctx, next) => naiveZone.run(timeZone, next);
}

/** The zone of zone-less timestamps in the current request (UTC outside one). */
export function currentNaiveTimeZone(): string {
  return naiveZone.getStore() ?? 'UTC';
}
