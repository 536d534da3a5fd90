import { sql, type SqlToken as SqlFragment } from 'slonik';
import {
  followsWallClock,
  utcOriginMs,
  type GridSpec,
  type TimeWindow,
} from '../../shared/time/bucketGrid.ts';

// The bucket grid's rules (src/shared/time/bucketGrid.ts) as SQL: the expression that stamps a
// time with its bucket's start, and the starts of every bucket of a window.

/** An instant as a timestamptz literal. */
export const ts = (ms: number | Date) =>
  sql.fragment`${new Date(typeof ms === 'number' ? ms : ms.getTime()).toISOString()}::timestamptz`;

/** The bucket width as an interval. */
export function bucketWidth(grid: GridSpec) {
  return sql.fragment`make_interval(secs => ${grid.intervalSeconds}::float8)`;
}

/**
 * The start of the bucket holding a timestamptz expression (time_bucket on the grid). A fixed
 * grid (any grid but a zone's days and weeks) is bucketed in absolute time from its origin
 * instant; only a wall-clock grid hands the zone to time_bucket.
 */
export function bucketSql(grid: GridSpec, value: SqlFragment): SqlFragment {
  const width = bucketWidth(grid);
  const offset = grid.offsetSeconds ?? 0;
  if (!followsWallClock(grid))
    return sql.fragment`time_bucket(${width}, ${value}, ${ts(utcOriginMs(grid))})`;
  const origin = grid.origin ? ts(grid.origin) : sql.fragment`NULL::timestamptz`;
  return sql.fragment`time_bucket(${width}, ${value}, ${grid.timeZone!}::text,
    origin => ${origin}, "offset" => make_interval(secs => ${offset}::float8))`;
}

/** Bounds of a part of a window inside a statement (see answerSql.ts runsQuery). */
export interface RunBounds {
  lo: SqlFragment;
  hi: SqlFragment;
}

/**
 * Start of every bucket that overlaps the window (or the run's part of it) and has begun by now:
 * a fill never invents candles for time still to come, however far a window reaches (buckets
 * holding data, stored up to PRICE_MAX_FUTURE_SECONDS ahead, still come from the data side of
 * the join). A wall-clock grid is walked in local wall-clock time and each step mapped back
 * through the same time_bucket, so DST days get their 23 or 25 hours and every start matches
 * the data's buckets exactly.
 */
export function bucketStartsSql(grid: GridSpec, window: TimeWindow, run?: RunBounds): SqlFragment {
  const width = bucketWidth(grid);
  const first = bucketSql(grid, ts(window.from));
  const lastStart = (end: SqlFragment) =>
    sql.fragment`least(${end} - interval '1 microsecond', now())`;
  if (run) {
    return sql.fragment`
      SELECT generate_series(${bucketSql(grid, run.lo)}, ${lastStart(run.hi)}, ${width}) AS bucket`;
  }
  if (!followsWallClock(grid)) {
    return sql.fragment`
      SELECT generate_series(${first}, ${lastStart(ts(window.to))}, ${width}) AS bucket`;
  }
  const zone = sql.fragment`${grid.timeZone!}::text`;
  const local = bucketSql(grid, sql.fragment`(local AT TIME ZONE ${zone})`);
  return sql.fragment`
    SELECT DISTINCT ${local} AS bucket
    FROM generate_series((${first}) AT TIME ZONE ${zone}, ${ts(window.to)} AT TIME ZONE ${zone}, ${width}) AS local
    WHERE ${local} < ${ts(window.to)} AND ${local} <= now()`;
}
