import { ValidationError } from '../errors.ts';
import { zoneOffsetSeconds, zoneOffsetsOver } from './timeZones.ts';

// The bucket grid of a request, in one place. Every answer that groups time into buckets (the
// data module's history, candles and export, the signal read-backs, the API's market and
// portfolio history) takes its rules from here:
//
//   - a bucket is `intervalSeconds` wide; its boundaries fall on origin + k·width, the origin
//     being the Unix epoch unless one is given, shifted by `offsetSeconds`;
//   - with a zone the boundaries are counted on that zone's wall clock, from local midnight of
//     Monday 2000-01-03 unless an origin is given (TimescaleDB's default), so days start at
//     local midnight and weeks on Mondays;
//   - a bucket is stamped with its start;
//   - a window is [from, to): rows at or after `from` and before `to` count;
//   - the point cap counts the buckets a window can overlap (maxBuckets).
//
// Pure functions over plain numbers and dates; the SQL form of the same rules is
// src/data/history/gridSql.ts.

/** What decides where a request's bucket boundaries fall. */
export interface GridSpec {
  intervalSeconds: number;
  /** IANA zone for calendar alignment; absent: buckets in UTC. */
  timeZone?: string;
  /** Buckets are aligned to this instant (default: see above). */
  origin?: Date;
  /** Shifts every bucket boundary by this many seconds. */
  offsetSeconds?: number;
}

/** A window of time, [from, to). */
export interface TimeWindow {
  from: Date;
  to: Date;
}

/**
 * A grid in local wall-clock seconds: boundaries at `originSeconds + k·widthSeconds`.
 * `zoneOffsetsSeconds` lists every UTC offset the zone uses over the window (just [0] in UTC).
 */
export interface LocalGrid {
  widthSeconds: number;
  originSeconds: number;
  zoneOffsetsSeconds: number[];
}

/** Zone-aligned grids default to local midnight of Monday 2000-01-03, in local seconds. */
export const LOCAL_DEFAULT_ORIGIN_SECONDS = Date.UTC(2000, 0, 3) / 1000;

/** A boundary of a UTC grid, in epoch milliseconds (zone grids have none fixed in UTC). */
export function utcOriginMs(grid: GridSpec): number {
  return (grid.origin?.getTime() ?? 0) + (grid.offsetSeconds ?? 0) * 1000;
}

/** Start of the UTC grid's bucket holding `ms` (its stamp). */
export function bucketStartMs(grid: GridSpec, ms: number): number {
  const width = grid.intervalSeconds * 1000;
  const origin = utcOriginMs(grid);
  return origin + Math.floor((ms - origin) / width) * width;
}

/** Whether `ms` is a bucket boundary of the UTC grid. */
export function isBoundary(grid: GridSpec, ms: number): boolean {
  return bucketStartMs(grid, ms) === ms;
}

/** The grid over a window in local wall-clock seconds, as the rollup planner reads it. */
export function localGrid(grid: GridSpec, window: TimeWindow): LocalGrid {
  const offset = grid.offsetSeconds ?? 0;
  if (!grid.timeZone) {
    return {
      widthSeconds: grid.intervalSeconds,
      originSeconds: utcOriginMs(grid) / 1000,
      zoneOffsetsSeconds: [0],
    };
  }
  const zone = grid.timeZone;
  const origin = grid.origin
    ? grid.origin.getTime() / 1000 + zoneOffsetSeconds(zone, grid.origin.getTime())
    : LOCAL_DEFAULT_ORIGIN_SECONDS;
  return {
    widthSeconds: grid.intervalSeconds,
    originSeconds: origin + offset,
    zoneOffsetsSeconds: zoneOffsetsOver(zone, window.from.getTime(), window.to.getTime()),
  };
}

/**
 * The point cap's count: the most buckets a window can overlap, whatever the grid's alignment,
 * so that two callers whose clocks differ by a moment agree (a window as long as n buckets
 * overlaps n + 1 when it does not start on a boundary). In a zone the wall clock may run up to
 * the window's change of offset longer than the window (a spring-forward day).
 */
export function maxBuckets(grid: GridSpec, window: TimeWindow): number {
  const spanMs = window.to.getTime() - window.from.getTime();
  const offsets = grid.timeZone ? localGrid(grid, window).zoneOffsetsSeconds : [0];
  const shiftMs = (Math.max(...offsets) - Math.min(...offsets)) * 1000;
  return Math.ceil((spanMs + shiftMs) / (grid.intervalSeconds * 1000)) + 1;
}

/** maxBuckets of the last `hours` on an epoch-aligned UTC grid (the contract's history). */
export function maxBucketsOverHours(hours: number, intervalSeconds: number): number {
  const to = new Date(hours * 3_600_000);
  return maxBuckets({ intervalSeconds }, { from: new Date(0), to });
}

/** The most whole hours whose answer stays within the point cap at this interval. */
export function longestHoursWithin(maxPoints: number, intervalSeconds: number): number {
  return Math.floor(((maxPoints - 1) * intervalSeconds) / 3600);
}

export interface PointCapRefusal {
  /** The query parameter to change, e.g. `intervalSeconds`. */
  parameter: string;
  /** What to do instead, appended to the message (e.g. use the export route). */
  advice: string;
}

/** A 400 `too_many_points` when an answer could hold more than `maxPoints` buckets. */
export function assertWithinPointCap(
  points: number,
  maxPoints: number,
  refusal: PointCapRefusal,
): void {
  if (points <= maxPoints) return;
  throw new ValidationError(
    `The request would return up to ${points} points, more than the limit of ${maxPoints}; ${refusal.advice}`,
    [{ path: `query.${refusal.parameter}`, message: `at most ${maxPoints} points per answer` }],
    'too_many_points',
  );
}
