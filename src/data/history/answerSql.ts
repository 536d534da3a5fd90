import { sql, type SqlToken as SqlFragment } from 'slonik';
import { z } from 'zod';
import { followsWallClock } from '../../shared/time/bucketGrid.ts';
import type { FillSeeds, SeedPoint } from './fillSeeds.ts';
import { bucketSql, bucketStartsSql, ts, type RunBounds } from './gridSql.ts';
import { CANDLE_IS_EMPTY, candleItem, openItem, type ItemShape } from './jsonText.ts';
import { levelNamed, type LevelName } from './levels.ts';
import { mergeAdjacent, type Segment } from './planner.ts';
import type { CandleRequest } from './request.ts';
import { clip, RUN_BUCKETS, type Run } from './runs.ts';

// The statements that answer a planned window: each segment's rows (a level's or raw), merged
// into the request's buckets, gap-filled as asked, and for JSON answers formatted into runs of
// items by PostgreSQL itself (jsonText.ts).

export const candleRow = z.object({
  timestamp: z.date(),
  open: z.number().nullable(),
  high: z.number().nullable(),
  low: z.number().nullable(),
  close: z.number().nullable(),
  volume: z.number(),
  count: z.number(),
});
export type CandleRow = z.infer<typeof candleRow>;

// Over the wire the bucket start travels as epoch milliseconds: parsing a number is several
// times cheaper than parsing a timestamp string, which shows on answers of thousands of rows.
export const candleWireRow = candleRow.extend({ timestamp: z.number() });
const EPOCH_MS = sql.fragment`(extract(epoch FROM bucket) * 1000)::float8`;

export const fromWire = <T extends { timestamp: number }>(row: T) => ({
  ...row,
  timestamp: new Date(row.timestamp),
});

/**
 * One row per run of consecutive buckets (at most RUN_BUCKETS): their JSON texts joined, and
 * whether all are empty.
 */
export const runTextRow = z.object({ empty: z.boolean(), items: z.string() });
/**
 * A run's text with the currency's rollup revision read by the same statement, so as of the
 * same snapshot as the rows: a text is kept under a revision only if it was computed at it.
 */
export const revisedRunTextRow = runTextRow.extend({ revision: z.number() });

/** A currency's rollup revision inside a statement (0 before its first rewrite). */
export const revisionOf = (code: SqlFragment | string) =>
  sql.fragment`(SELECT coalesce(max(revision), 0) FROM rollup_revisions r
                WHERE r.currency_code = ${code})`;
/** Which run a bucket belongs to, where runs cannot be cut in time (see numberedRunsQuery). */
const RUN_NUMBER = sql.fragment`(row_number() OVER (ORDER BY bucket) - 1) / ${RUN_BUCKETS}`;

/** The bounds of the run a lateral subquery computes (see runsQuery). */
export const LATERAL_RUN: RunBounds = { lo: sql.fragment`run.lo`, hi: sql.fragment`run.hi` };

/**
 * The statement computing the given runs' JSON texts: one row (empty, items) per run, in order.
 * It reads only the runs' own parts of the plan: each source's bounds are then constants that
 * let the planner leave out every chunk no run reads (a year of 7-day chunks otherwise).
 */
export function runsJsonQuery(
  request: CandleRequest,
  segments: readonly Segment[],
  seeds: FillSeeds,
  shape: ItemShape,
  runs: readonly Run[],
) {
  const own = mergeAdjacent(runs.flatMap((run) => clip(segments, run.start, run.end)));
  return runsQuery(runs, perRunQuery(request, own, seeds, shape, LATERAL_RUN), request.code);
}

/** The runs' starts or ends as a timestamptz[] parameter. */
export const instants = (runs: readonly Run[], pick: 'start' | 'end') =>
  sql.array(
    runs.map((run) => new Date(run[pick]).toISOString()),
    'timestamptz',
  );

function segmentSource(code: string, segment: Segment, run?: RunBounds): SqlFragment {
  if (segment.source === 'raw') {
    return sql.fragment`
      SELECT time AS t, open, high, low, close, volume, 1::bigint AS count,
             time AS first_time, time AS last_time
      FROM price_observations
      WHERE currency_code = ${code} AND time >= ${ts(segment.start)} AND time < ${ts(segment.end)}
        ${withinRun(sql.fragment`time`, run)} ${runTouches(segment, run)}`;
  }
  const level = levelOf(segment);
  return sql.fragment`
    SELECT bucket AS t, open, high, low, close, volume, count, first_time, last_time
    FROM ${sql.identifier([level.relation])}
    WHERE currency_code = ${code} AND bucket >= ${ts(segment.start)} AND bucket < ${ts(segment.end)}
      ${withinRun(sql.fragment`bucket`, run)} ${runTouches(segment, run)}`;
}

/**
 * Skips a source in every run it does not overlap. The condition holds only the run's bounds
 * and constants, so PostgreSQL checks it once per run (a one-time filter) before opening the
 * source's scan; without it the window's edge segments (a partial bucket of raw rows, the tail
 * after a watermark) were probed through their index in every run of the batch, 0.35–0.44 ms
 * and 10–20 buffers a run for nothing.
 */
function runTouches(segment: Segment, run: RunBounds | undefined): SqlFragment {
  return run
    ? sql.fragment`AND ${run.lo} < ${ts(segment.end)} AND ${run.hi} > ${ts(segment.start)}`
    : sql.fragment``;
}

/**
 * Keeps a source's rows to one run. Runs start and end on bucket boundaries of the request
 * (but for the window's own ends), and level rows nest inside the request's buckets, so a
 * bucket's rows all fall in the same run. Plain bounds on the time column, which PostgreSQL
 * compares once per run to skip the chunks a run does not reach (runtime chunk exclusion);
 * bounds on (currency_code, bucket) rows, once used for candles_5m, skipped none and probed
 * every chunk of the window in every run (sql/0280_candles_5m_brin.sql).
 */
function withinRun(column: SqlFragment, run: RunBounds | undefined): SqlFragment {
  return run ? sql.fragment`AND ${column} >= ${run.lo} AND ${column} < ${run.hi}` : sql.fragment``;
}

/** The whole answer in one statement, a row per bucket, ascending (see answerRows). */
export function candleQuery(request: CandleRequest, segments: Segment[], seeds: FillSeeds) {
  return sql.type(candleWireRow)`
    SELECT ${EPOCH_MS} AS timestamp, open, high, low, close, volume, count
    FROM (${answerRows(request, segments, seeds)}) AS answer ORDER BY bucket`;
}

/**
 * The earliest row time of the given sources (raw observation or level bucket), or null: each
 * source is an index probe, however far ahead its first row lies.
 */
export function firstSourceTimeQuery(code: string, segments: readonly Segment[]) {
  const probes = segments.map(
    (segment) => sql.fragment`(SELECT t FROM (${segmentSource(code, segment)}) AS rows
      ORDER BY t LIMIT 1)`,
  );
  return sql.type(z.object({ first: z.date().nullable() }))`
    SELECT min(t) AS first FROM (${sql.join(probes, sql.fragment` UNION ALL `)}) AS probes`;
}

/** The first bucket of the request holding data from the given sources, with its close. */
export function firstDataBucketQuery(request: CandleRequest, segments: Segment[]) {
  return sql.type(z.object({ bucket: z.date(), close: z.number() }))`
    SELECT bucket, close FROM (${bucketRows(request, segments, 'ohlcv')}) AS data
    WHERE close IS NOT NULL ORDER BY bucket LIMIT 1`;
}

/**
 * One run's JSON text as PostgreSQL builds it, bounded by RUN: a row (empty, items) with the
 * run's items joined by commas, and whether none holds an observation or a filled value. For
 * answers of thousands of buckets, formatting them in SQL costs a fraction of turning rows into
 * objects and serialising those.
 */
function perRunQuery(
  request: CandleRequest,
  segments: Segment[],
  seeds: FillSeeds,
  shape: ItemShape,
  run: RunBounds,
): SqlFragment {
  if (shape === 'open') {
    return sql.fragment`
      SELECT count(*) = 0 AS empty, string_agg(${openItem(request)}, ',') AS items
      FROM (${inBucketOrder(bucketRows(request, segments, 'open', run))}) AS buckets`;
  }
  return sql.fragment`
    SELECT bool_and(${CANDLE_IS_EMPTY}) AS empty, string_agg(${candleItem(request)}, ',') AS items
    FROM (${inBucketOrder(answerRows(request, segments, seeds, run))}) AS candle`;
}

/**
 * A run's rows in bucket order, for an aggregate that joins them in the order it receives them.
 * PostgreSQL 15 sorts the input of every aggregate given its own ORDER BY (`string_agg(…, ','
 * ORDER BY bucket)`), even rows that an index scan already returns in that order; a subquery's
 * ORDER BY is planned like any other, so it costs nothing where the rows come in order (a level's
 * key) and a sort of the few re-bucketed rows where they do not. The rows reach the aggregate
 * in that order because nothing else happens between them (no join, no grouping), the usage the
 * PostgreSQL manual gives for ordered input to aggregates. One batch of a year at 1 h (half its
 * runs, 150 executions three times over, alternating): OHLCV items 20.3 → 15.4 ms, values 12.6 → 11.3.
 */
export function inBucketOrder(rows: SqlFragment): SqlFragment {
  return sql.fragment`SELECT * FROM (${rows}) AS unordered ORDER BY bucket`;
}

/**
 * The given runs, each computed and aggregated on its own by `perRun` (its sources reading only
 * its rows): one row per run, in order. Cheaper than numbering a whole answer's rows and
 * sorting them into runs, and no run groups enough buckets for a hash aggregate to spill.
 */
function runsQuery(runs: readonly Run[], perRun: SqlFragment, code: string) {
  return sql.type(revisedRunTextRow)`
    SELECT run.lo, run.hi, coalesce(answer.empty, true) AS empty, coalesce(answer.items, '') AS items,
           ${revisionOf(code)} AS revision
    FROM unnest(${instants(runs, 'start')}, ${instants(runs, 'end')}) WITH ORDINALITY AS run(lo, hi, n)
    CROSS JOIN LATERAL (${perRun}) AS answer
    ORDER BY run.n`;
}

/**
 * An answer whose runs cannot be cut in time (buckets of a zone's days, fills that carry values
 * across buckets): its rows (bucket, is_empty, item) are numbered in order and grouped by runs
 * of RUN_BUCKETS.
 */
export function numberedRunsQuery(rows: SqlFragment) {
  return sql.type(runTextRow)`
    SELECT bool_and(is_empty) AS empty, string_agg(item, ',' ORDER BY bucket) AS items
    FROM (SELECT *, ${RUN_NUMBER} AS run_number FROM (${rows}) AS numbered) AS items
    GROUP BY run_number ORDER BY run_number`;
}

/**
 * Sub-buckets from the planned sources, merged exactly into the request's buckets (open = first
 * open by observation time, close = last close, extremes, sums), then gap-filled over the grid of
 * bucket starts: one row per bucket (`bucket` and the candle's columns), in no particular order.
 */
export function answerRows(
  request: CandleRequest,
  segments: Segment[],
  fillSeeds: FillSeeds | SeedSql,
  run?: RunBounds,
): SqlFragment {
  const seeds = 'beforeClose' in fillSeeds ? fillSeeds : constantSeeds(fillSeeds);
  const data = bucketRows(request, segments, 'ohlcv', run);
  if (request.fill === 'none') return data;
  const joined = sql.fragment`
    data AS (${data}),
    grid AS (${bucketStartsSql(request, request, run)}),
    joined AS (
      SELECT coalesce(g.bucket, d.bucket) AS bucket, d.open, d.high, d.low, d.close,
             coalesce(d.volume, 0) AS volume, coalesce(d.count, 0)::bigint AS count
      FROM grid g FULL JOIN data d ON d.bucket = g.bucket
    )`;
  if (request.fill === 'null') {
    return sql.fragment`
      WITH ${joined}
      SELECT bucket, open, high, low, close, volume, count FROM joined`;
  }
  if (request.fill === 'previous') {
    return onlyWhereEmpty(
      joined,
      sql.fragment`
      marked AS (SELECT *, count(close) OVER (ORDER BY bucket) AS run FROM joined),
      filled AS (
        SELECT *, coalesce(first_value(close) OVER (PARTITION BY run ORDER BY bucket),
                           ${seeds.beforeClose}) AS carried
        FROM marked
      )`,
      sql.fragment`
      SELECT bucket,
             coalesce(open, carried) AS open, coalesce(high, carried) AS high,
             coalesce(low, carried) AS low, coalesce(close, carried) AS close, volume, count
      FROM filled`,
    );
  }
  return onlyWhereEmpty(
    joined,
    sql.fragment`
    marked AS (
      SELECT *, count(close) OVER (ORDER BY bucket) AS prev_run,
                count(close) OVER (ORDER BY bucket DESC) AS next_run
      FROM joined
    ),
    anchored AS (
      SELECT m.*,
             CASE WHEN prev_run = 0 THEN ${seeds.beforeClose}
                  ELSE first_value(close) OVER (PARTITION BY prev_run ORDER BY bucket) END AS y0,
             CASE WHEN prev_run = 0 THEN ${seeds.beforeTime}
                  ELSE first_value(bucket) OVER (PARTITION BY prev_run ORDER BY bucket) END AS x0,
             CASE WHEN next_run = 0 THEN ${seeds.afterClose}
                  ELSE first_value(close) OVER (PARTITION BY next_run ORDER BY bucket DESC) END AS y1,
             CASE WHEN next_run = 0 THEN ${seeds.afterTime}
                  ELSE first_value(bucket) OVER (PARTITION BY next_run ORDER BY bucket DESC) END AS x1
      FROM marked m
    ),
    interpolated AS (
      SELECT *,
             CASE WHEN close IS NOT NULL THEN NULL
                  WHEN y0 IS NULL OR y1 IS NULL THEN NULL
                  WHEN x1 <= x0 THEN y0
                  ELSE y0 + (y1 - y0) * least(1, greatest(0,
                         extract(epoch FROM bucket - x0) / extract(epoch FROM x1 - x0)))::float8
             END AS line
      FROM anchored
    )`,
    sql.fragment`
    SELECT bucket,
           coalesce(open, line) AS open, coalesce(high, line) AS high,
           coalesce(low, line) AS low, coalesce(close, line) AS close, volume, count
    FROM interpolated`,
  );
}

/**
 * A carrying fill computed only where it changes something. Where no bucket is empty (a bucket
 * holding data has every column NOT NULL) the fill gives back the joined rows as they are, and
 * on market data most runs have no empty bucket. The test is an initPlan gating each branch by
 * a one-time filter, so the sorts behind the fill's window functions then never run.
 * `fillSteps` are the fill's CTEs over `joined`, `filledRows` the SELECT of its rows.
 */
function onlyWhereEmpty(
  joined: SqlFragment,
  fillSteps: SqlFragment,
  filledRows: SqlFragment,
): SqlFragment {
  return sql.fragment`
    WITH ${joined},
    emptiness AS (SELECT EXISTS (SELECT FROM joined WHERE close IS NULL) AS found),
    ${fillSteps}
    SELECT bucket, open, high, low, close, volume, count FROM joined
    WHERE NOT (SELECT found FROM emptiness)
    UNION ALL
    SELECT * FROM (${filledRows}) AS filled_rows WHERE (SELECT found FROM emptiness)`;
}

const AGGREGATES = {
  ohlcv: sql.fragment`first(open, first_time) AS open, max(high) AS high, min(low) AS low,
    last(close, last_time) AS close, sum(volume) AS volume, sum(count)::bigint AS count`,
  open: sql.fragment`first(open, first_time) AS open`,
};
const COLUMNS = {
  ohlcv: sql.fragment`open, high, low, close, volume, count`,
  open: sql.fragment`open`,
};

/**
 * One row per non-empty bucket. Rows of a level exactly as wide as the buckets (1h rows for
 * hourly buckets on a grid fixed in time) already are answers and pass straight through; everything
 * else is re-bucketed and merged. The two never share a bucket: a level serves whole buckets.
 */
function bucketRows(
  request: CandleRequest,
  segments: Segment[],
  shape: 'ohlcv' | 'open',
  run?: RunBounds,
) {
  const isDirect = (segment: Segment) => passesThrough(request, segment);
  const direct = segments.filter(isDirect).map(
    (segment) => sql.fragment`
      SELECT bucket, ${COLUMNS[shape]} FROM ${sql.identifier([levelOf(segment).relation])}
      WHERE currency_code = ${request.code}
        AND bucket >= ${ts(segment.start)} AND bucket < ${ts(segment.end)}
        ${withinRun(sql.fragment`bucket`, run)} ${runTouches(segment, run)}`,
  );
  const rest = segments.filter((segment) => !isDirect(segment));
  const merged = rest.length
    ? [
        sql.fragment`
          SELECT ${bucketSql(request, sql.fragment`t`)} AS bucket, ${AGGREGATES[shape]}
          FROM (${sql.join(
            rest.map((segment) => segmentSource(request.code, segment, run)),
            sql.fragment` UNION ALL `,
          )}) AS parts
          GROUP BY 1`,
      ]
    : [];
  return sql.join([...direct, ...merged], sql.fragment` UNION ALL `);
}

export function passesThrough(request: CandleRequest, segment: Segment): boolean {
  return (
    !followsWallClock(request) &&
    segment.source !== 'raw' &&
    levelOf(segment).seconds === request.intervalSeconds
  );
}

function levelOf(segment: Segment) {
  return levelNamed(segment.source as LevelName);
}

/** A fill's seeds inside a statement: constants, or the columns of the run being computed. */
export interface SeedSql {
  beforeClose: SqlFragment;
  beforeTime: SqlFragment;
  afterClose: SqlFragment;
  afterTime: SqlFragment;
}

function constantSeeds(seeds: FillSeeds): SeedSql {
  const close = (point: SeedPoint | null) => sql.fragment`${point?.close ?? null}::float8`;
  const time = (point: SeedPoint | null) => sql.fragment`${point?.time ?? null}::timestamptz`;
  return {
    beforeClose: close(seeds.before),
    beforeTime: time(seeds.before),
    afterClose: close(seeds.after),
    afterTime: time(seeds.after),
  };
}
