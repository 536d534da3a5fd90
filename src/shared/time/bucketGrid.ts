import { ValidationError } from '../errors.ts';
import { instantOfWallClock, zoneOffsetSeconds, zoneOffsetsOver } from './timeZones.ts';

// The bucket grid of a request, in one place. Every answer that groups time into buckets (the
// data module's history, candles and export, the signal read-backs, the API's market and
// portfolio history) takes its rules from here:
//
//   - a bucket is `intervalSeconds` wide; its boundaries fall on origin + k·width, the origin
//     being the Unix epoch unless one is given, shifted by `offsetSeconds`;
//   - with a zone, buckets shorter than a day stay a fixed width in absolute time, counted from
//     local midnight of Monday 2000-01-03 in that zone unless an origin is given: a DST change
//     neither stretches nor merges them, so the repeated hour of an autumn night is two hours of
//     distinct buckets and the skipped hour of a spring night none (as pandas and TradingView
//     count intraday bars; TimescaleDB's time_bucket with a zone would fold the repeated hour
//     into one bucket stamped after half its rows);
//   - with a zone, buckets of a day or longer follow its wall clock (the wall-clock grid) from
//     that same local midnight unless an origin is given (TimescaleDB's default): days start at
//     local midnight and last 23 or 25 hours across a change, weeks start on Mondays;
//   - a bucket is stamped with its start, an instant (rendered in UTC);
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

/** From this width on, buckets in a zone follow its wall clock (see the rules above). */
export const WALL_CLOCK_MIN_SECONDS = 86_400;

/**
 * Whether the grid follows a zone's wall clock (a zone and buckets of a day or more). Every
 * other grid is fixed in absolute time: its boundaries are utcOriginMs + k·width.
 */
export function followsWallClock(grid: GridSpec): boolean {
  return grid.timeZone !== undefined && grid.intervalSeconds >= WALL_CLOCK_MIN_SECONDS;
}

/**
 * A boundary of a fixed grid, in epoch milliseconds: the origin (the epoch; in a zone, its local
 * midnight of 2000-01-03) shifted by the offset. Wall-clock grids have none fixed in time.
 */
export function utcOriginMs(grid: GridSpec): number {
  const offsetMs = (grid.offsetSeconds ?? 0) * 1000;
  if (grid.origin) return grid.origin.getTime() + offsetMs;
  if (!grid.timeZone) return offsetMs;
  return zoneAnchorMs(grid.timeZone) + offsetMs;
}

// A zone's local midnight of 2000-01-03 never changes; placing it costs a few Intl calls.
const zoneAnchors = new Map<string, number>();

function zoneAnchorMs(timeZone: string): number {
  let anchor = zoneAnchors.get(timeZone);
  if (anchor === undefined) {
    anchor = instantOfWallClock(LOCAL_DEFAULT_ORIGIN_SECONDS * 1000, timeZone);
    zoneAnchors.set(timeZone, anchor);
  }
  return anchor;
}

/**
 * Whether every bucket stamp of the grid is a whole second: widths and offsets are whole
 * seconds, zone offsets too, so only an origin with milliseconds puts stamps between seconds.
 */
export function stampsOnWholeSeconds(grid: GridSpec): boolean {
  return (
    (grid.origin?.getTime() ?? 0) % 1000 === 0 &&
    Number.isInteger(grid.intervalSeconds) &&
    Number.isInteger(grid.offsetSeconds ?? 0)
  );
}

/** Start of the fixed grid's bucket holding `ms` (its stamp). */
export function bucketStartMs(grid: GridSpec, ms: number): number {
  const width = grid.intervalSeconds * 1000;
  const origin = utcOriginMs(grid);
  return origin + Math.floor((ms - origin) / width) * width;
}

/** Whether `ms` is a bucket boundary of the fixed grid. */
export function isBoundary(grid: GridSpec, ms: number): boolean {
  return bucketStartMs(grid, ms) === ms;
}

/** The grid over a window in local wall-clock seconds, as the rollup planner reads it. */
export function localGrid(grid: GridSpec, window: TimeWindow): LocalGrid {
  const offset = grid.offsetSeconds ?? 0;
  if (!followsWallClock(grid)) {
    return {
      widthSeconds: grid.intervalSeconds,
      originSeconds: utcOriginMs(grid) / 1000,
      zoneOffsetsSeconds: [0],
    };
  }
  return {
    widthSeconds: grid.intervalSeconds,
    originSeconds: wallClockOriginSeconds(grid) + offset,
    zoneOffsetsSeconds: zoneOffsetsOver(grid.timeZone!, window.from.getTime(), window.to.getTime()),
  };
}

/** A wall-clock grid's origin in local seconds: the given origin's local time, or 2000-01-03. */
function wallClockOriginSeconds(grid: GridSpec): number {
  if (!grid.origin) return LOCAL_DEFAULT_ORIGIN_SECONDS;
  const ms = grid.origin.getTime();
  return ms / 1000 + zoneOffsetSeconds(grid.timeZone!, ms);
}

/**
 * The fixed grid that a wall-clock grid equals over a window in which its zone keeps one UTC
 * offset (India, China, Japan, Nepal and most zones without daylight saving; a summer's weeks in
 * Berlin): its days and weeks then start at local midnight a fixed width apart in absolute time,
 * from its local origin less that offset. Undefined for a fixed grid, and where the offset changes
 * anywhere from the start of the window's first bucket to the end of its last.
 */
export function fixedEquivalent(grid: GridSpec, window: TimeWindow): GridSpec | undefined {
  if (!followsWallClock(grid)) return undefined;
  const widthMs = grid.intervalSeconds * 1000;
  const offsets = zoneOffsetsOver(
    grid.timeZone!,
    window.from.getTime() - widthMs,
    window.to.getTime() + widthMs,
  );
  if (offsets.length !== 1) return undefined;
  const localOriginSeconds = wallClockOriginSeconds(grid) + (grid.offsetSeconds ?? 0);
  return {
    intervalSeconds: grid.intervalSeconds,
    origin: new Date((localOriginSeconds - offsets[0]!) * 1000),
  };
}

/**
 * The point cap's count: the most buckets a window can overlap, whatever the grid's alignment,
 * so that two callers whose clocks differ by a moment agree (a window as long as n buckets
 * overlaps n + 1 when it does not start on a boundary). On a wall-clock grid the wall clock may
 * run up to the window's change of offset longer than the window (a spring-forward day).
 */
export function maxBuckets(grid: GridSpec, window: TimeWindow): number {
  const spanMs = window.to.getTime() - window.from.getTime();
  const offsets = localGrid(grid, window).zoneOffsetsSeconds;
  const shiftMs = (Math.max(...offsets) - Math.min(...offsets)) * 1000;
  return Math.ceil((spanMs + shiftMs) / (grid.intervalSeconds * 1000)) + 1;
}

/**
 * maxBuckets of the last `hours` before `now`: on the epoch-aligned grid (the contract's history)
 * or in a zone (the API's candles).
 */
export function maxBucketsOverHours(
  hours: number,
  intervalSeconds: number,
  timeZone?: string,
  now = Date.now(),
): number {
  const window = { from: new Date(now - hours * 3_600_000), to: new Date(now) };
  return maxBuckets({ intervalSeconds, ...(timeZone ? { timeZone } : {}) }, window);
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
