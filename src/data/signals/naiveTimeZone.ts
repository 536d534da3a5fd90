import { AsyncLocalStorage } from 'node:async_hooks';
import type { Middleware } from 'koa';
import { zoneOffsetSeconds } from '../../shared/time/timeZones.ts';

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

/**
 * The instant at which the wall clock of `timeZone` shows `wallClockMs` (that wall-clock reading
 * taken as if it were UTC). In a DST gap the later offset applies; in an overlap the earlier
 * instant (the first time the clock shows it) is taken.
 */
export function instantOfWallClock(wallClockMs: number, timeZone: string): number {
  if (timeZone === 'UTC') return wallClockMs;
  const first = wallClockMs - zoneOffsetSeconds(timeZone, wallClockMs) * 1000;
  const second = wallClockMs - zoneOffsetSeconds(timeZone, first) * 1000;
  const candidates = [first, second].filter(
    (t) => t + zoneOffsetSeconds(timeZone, t) * 1000 === wallClockMs,
  );
  return candidates.length > 0 ? Math.min(...candidates) : Math.max(first, second);
}
