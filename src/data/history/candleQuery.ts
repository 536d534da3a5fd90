import {
  sql,
  type DatabasePool,
  type DatabaseTransactionConnection,
  type SqlToken as SqlFragment,
} from 'slonik';
import { z } from 'zod';
import { NotFoundError, ValidationError } from '../../shared/errors.ts';
import { LEVELS } from './levels.ts';
import {
  mergeAdjacent,
  mergeIntervals,
  planSegments,
  usableLevels,
  type BucketGrid,
  type Interval,
  type RollupFreshness,
  type Segment,
} from './planner.ts';
import { readFillSeeds, type FillSeeds, type SeedPoint } from './fillSeeds.ts';
import { readFreshness, rollupMode, type Freshness } from './rollupState.ts';
import type { RunCache } from './runCache.ts';
import { isRenderedRun, readRunTexts, type ItemShape } from './runTexts.ts';
import { zoneOffsetSeconds, zoneOffsetsOver } from './timeZones.ts';
import {
  clip,
  gridOrigin,
  groupRuns,
  isCuttable,
  jsonArrayPieces,
  planRuns,
  RUN_BUCKETS,
  type Run,
  type SettledSegment,
} from './windowParts.ts';

export type FillMode = 'none' | 'null' | 'previous' | 'linear';

export interface CandleRequest {
  code: string;
  /** Rows at or after `from` and before `to` are counted. */
  from: Date;
  to: Date;
  intervalSeconds: number;
  fill: FillMode;
  /** IANA zone for calendar alignment; absent: buckets in UTC aligned to the epoch. */
  timeZone?: string;
  /** Buckets are aligned to this instant (default: the epoch, or with a zone local midnight of Monday 2000-01-03). */
  origin?: Date;
  /** Shifts every bucket boundary by this many seconds. */
  offsetSeconds?: number;
}

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
const candleWireRow = candleRow.extend({ timestamp: z.number() });
const EPOCH_MS = sql.fragment`(extract(epoch FROM bucket) * 1000)::float8`;

/** A whole answer as the JSON text of a response body, in pieces to write one after another. */
export interface JsonAnswer {
  pieces: Array<string | Buffer>;
  /** No bucket holds an observation or a filled value (the routes answer 204). */
  empty: boolean;
}
/**
 * One row per run of consecutive buckets (at most RUN_BUCKETS): their JSON texts joined, and
 * whether all are empty.
 */
const jsonChunk = z.object({ empty: z.boolean(), items: z.string() });
/** Which run a bucket belongs to, where runs cannot be cut in time (see numberedRunsQuery). */
const CHUNK = sql.fragment`(row_number() OVER (ORDER BY bucket) - 1) / ${RUN_BUCKETS}`;
/** A bucket start as JavaScript's toISOString() writes it (millisecond precision, UTC). */
const ISO_INSTANT = sql.fragment`to_char(bucket AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
/**
 * A float8 column as a JSON value: PostgreSQL prints the shortest text that reads back as the
 * same double (extra_float_digits ≥ 1, the default), as JSON.stringify does. Stored prices are
 * finite (sql/0080_finite_prices.sql), so the text is always a JSON number; NULL is null.
 */
const jsonNumber = (column: 'open' | 'high' | 'low' | 'close' | 'volume') =>
  sql.fragment`coalesce(${sql.identifier([column])}::text, 'null')`;
/** A candle row (bucket and its columns) as the JSON text of an analyst route's item. */
const CANDLE_ITEM = sql.fragment`
  '{"timestamp":"' || ${ISO_INSTANT} || '","open":' || ${jsonNumber('open')} ||
  ',"high":' || ${jsonNumber('high')} || ',"low":' || ${jsonNumber('low')} ||
  ',"close":' || ${jsonNumber('close')} || ',"volume":' || ${jsonNumber('volume')} ||
  ',"count":' || count || '}'`;
/** A bucket's open as the JSON text of a contract history item. */
const OPEN_ITEM = sql.fragment`'{"timestamp":"' || ${ISO_INSTANT} || '","value":' || ${jsonNumber('open')} || '}'`;
/** A candle with neither an observation nor a filled value. */
const CANDLE_IS_EMPTY = sql.fragment`count = 0 AND open IS NULL`;

/**
 * The bounds of one run of buckets inside a statement that answers run by run (see runsQuery):
 * every source then reads only the rows of that run.
 */
interface RunBounds {
  lo: SqlFragment;
  hi: SqlFragment;
}
const RUN = { lo: sql.fragment`run.lo`, hi: sql.fragment`run.hi` } satisfies RunBounds;

const fromWire = <T extends { timestamp: number }>(row: T) => ({
  ...row,
  timestamp: new Date(row.timestamp),
});

// Time-zone-aligned buckets default to TimescaleDB's origin: local midnight of Monday 2000-01-03,
// so days start at local midnight and weeks on Mondays.
const LOCAL_DEFAULT_ORIGIN_SECONDS = Date.UTC(2000, 0, 3) / 1000;
// Beyond this many pending invalidations the planner treats their hull as one stale range:
// coarser, still exact, and the statement stays small.
const MAX_STALE_RANGES = 32;

/** The bucket grid of a request, in local wall-clock seconds (see planner.ts). */
export function bucketGrid(request: CandleRequest): BucketGrid {
  const offset = request.offsetSeconds ?? 0;
  if (!request.timeZone) {
    const origin = request.origin ? request.origin.getTime() / 1000 : 0;
    return {
      widthSeconds: request.intervalSeconds,
      originSeconds: origin + offset,
      zoneOffsetsSeconds: [0],
    };
  }
  const zone = request.timeZone;
  const origin = request.origin
    ? request.origin.getTime() / 1000 + zoneOffsetSeconds(zone, request.origin.getTime())
    : LOCAL_DEFAULT_ORIGIN_SECONDS;
  return {
    widthSeconds: request.intervalSeconds,
    originSeconds: origin + offset,
    zoneOffsetsSeconds: zoneOffsetsOver(zone, request.from.getTime(), request.to.getTime()),
  };
}

/**
 * Which sources answer which part of the window, and the values a fill carries into it (read at
 * the same time). The same round trip tells whether the currency is known; with
 * `requireCurrency` an unknown one is a 404.
 */
export async function planRequest(
  pool: DatabasePool,
  request: CandleRequest,
  options: { requireCurrency?: boolean } = {},
): Promise<Plan> {
  const mode = await rollupMode(pool);
  const [freshness, seeds] = await Promise.all([
    readFreshness(pool, mode, request.code, request.from, request.to),
    readFillSeeds(pool, request),
  ]);
  if (options.requireCurrency && !freshness.currencyKnown) {
    throw new NotFoundError(`Unknown currency '${request.code}'`, 'unknown_currency');
  }
  const levels = usableLevels(bucketGrid(request));
  const segments = planSegments(
    { start: request.from.getTime(), end: request.to.getTime() },
    levels,
    boundStale(freshness),
  );
  return { segments, seeds, freshness };
}

/** How a window is answered: its sources, the values a fill carries in, and the rollups' state. */
export interface Plan {
  segments: Segment[];
  seeds: FillSeeds;
  freshness: Freshness;
}

function boundStale(freshness: RollupFreshness): RollupFreshness {
  if (freshness.stale.length <= MAX_STALE_RANGES) return freshness;
  const merged = mergeIntervals(freshness.stale);
  return {
    ...freshness,
    stale: [{ start: merged[0]!.start, end: Math.max(...merged.map((r) => r.end)) }],
  };
}

export interface QueryOptions {
  /** Answer 404 for a code missing from the currency list (checked in the planner's round trip). */
  requireCurrency?: boolean;
  /** Where settled runs of JSON answers are kept between requests; none: always computed. */
  cache?: RunCache;
}

/** OHLCV candles of one currency, ascending, gap-filled as asked, as the JSON text of a body. */
export async function queryCandlesJson(
  pool: DatabasePool,
  request: CandleRequest,
  options: QueryOptions = {},
): Promise<JsonAnswer> {
  const plan = await planRequest(pool, request, options);
  if (!isCuttable(request)) return wholeJson(pool, request, plan);
  return jsonByRuns(pool, request, plan, 'candle', options.cache);
}

/**
 * The contract's history answer as JSON text: the open of each non-empty bucket (less to
 * aggregate and ship than whole candles), as `[{timestamp, value}]`.
 */
export async function queryOpensJson(
  pool: DatabasePool,
  request: Omit<CandleRequest, 'fill'>,
  options: QueryOptions = {},
): Promise<JsonAnswer> {
  const full = { ...request, fill: 'none' as const };
  const plan = await planRequest(pool, full, options);
  return jsonByRuns(pool, full, plan, 'open', options.cache);
}

/** A run's JSON text (its items joined by commas) and whether none of its buckets holds data. */
type RunText = { items: string | Buffer; empty: boolean };

/**
 * An answer on a fixed UTC grid, run by run (see planRuns): settled runs come from the cache
 * when it holds them, the others are fetched (fetchRuns), and the settled ones among those are
 * kept.
 */
async function jsonByRuns(
  pool: DatabasePool,
  request: CandleRequest,
  plan: Plan,
  shape: ItemShape,
  cache: RunCache | undefined,
): Promise<JsonAnswer> {
  const runs = planRuns(request, settledParts(plan.segments, plan.freshness));
  const keys = runs.map((run) => (cache && run.settled ? runKey(request, shape, plan, run) : null));
  const texts: Array<RunText | undefined> = keys.map((key) =>
    key === null ? undefined : cache!.get(key),
  );
  const found = await fetchRuns(
    pool,
    request,
    plan,
    shape,
    runs.filter((_, index) => !texts[index]),
  );
  for (const [index, run] of runs.entries()) {
    if (texts[index]) continue;
    const text = found.get(run)!;
    const key = keys[index];
    // Encoded once: the body then takes the kept Buffer as it is.
    texts[index] = key ? keep(cache!, key, text) : text;
  }
  return {
    pieces: jsonArrayPieces(texts.map((text) => text!.items)),
    empty: texts.every((text) => text!.empty),
  };
}

/**
 * The texts of runs not in the cache: whole hourly runs the worker rendered are read from the
 * database while the others are computed; any not rendered yet are computed after all.
 */
async function fetchRuns(
  pool: DatabasePool,
  request: CandleRequest,
  plan: Plan,
  shape: ItemShape,
  runs: readonly Run[],
): Promise<Map<Run, RunText>> {
  const rendered = runs.filter((run) =>
    isRenderedRun(request, clip(plan.segments, run.start, run.end), run),
  );
  const others = runs.filter((run) => !rendered.includes(run));
  const [stored, computed] = await Promise.all([
    readRunTexts(pool, request.code, shape, plan.freshness.revision, rendered),
    computeRuns(pool, request, plan, shape, others),
  ]);
  const unrendered = rendered.filter((run) => !stored.has(run.start));
  const found = new Map<Run, RunText>([
    ...computed,
    ...(await computeRuns(pool, request, plan, shape, unrendered)),
  ]);
  for (const run of rendered) {
    const text = stored.get(run.start);
    if (text) found.set(run, text);
  }
  return found;
}

function keep(cache: RunCache, key: string, text: RunText): RunText {
  const kept = { items: Buffer.from(text.items), empty: text.empty };
  cache.set(key, kept);
  return kept;
}

/**
 * Computes runs of a cuttable answer, in up to two groups of consecutive runs on separate
 * connections at once (see groupRuns).
 */
async function computeRuns(
  pool: DatabasePool,
  request: CandleRequest,
  plan: Plan,
  shape: ItemShape,
  runs: readonly Run[],
): Promise<Array<[Run, RunText]>> {
  const groups = groupRuns(runs, request);
  const results = await Promise.all(
    groups.map((group) => {
      const query = runsJsonQuery(request, plan.segments, plan.seeds, shape, group);
      return withZoneErrors(request, () => pool.any(query));
    }),
  );
  return groups.flatMap((group, g) =>
    group.map((run, i): [Run, RunText] => [run, results[g]![i]!]),
  );
}

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
  return runsQuery(runs, perRunQuery(request, own, seeds, shape));
}

/**
 * The plan's segments cut where their rows stop being settled: rows that change only with the
 * currency's revision. Rollup rows are settled below their level's materialisation watermark
 * (continuous aggregates compute newer buckets in real time). Raw rows are settled below the
 * finest level's watermark and outside pending backfills: older writes must be marked, which is
 * what the rollups themselves rely on, and consuming the marks moves the revision.
 */
function settledParts(segments: Segment[], freshness: Freshness): SettledSegment[] {
  return segments.flatMap((segment) => {
    const level = segment.source === 'raw' ? LEVELS[0].name : segment.source;
    const horizon = freshness.materialised[level] ?? -Infinity;
    const parts = [
      { ...segment, end: Math.min(segment.end, horizon), settled: true },
      { ...segment, start: Math.max(segment.start, horizon), settled: false },
    ].filter((part) => part.start < part.end);
    if (segment.source !== 'raw') return parts;
    return parts.flatMap((part) => (part.settled ? outsideStale(part, freshness.stale) : [part]));
  });
}

/** A settled raw segment cut by the pending backfills' ranges (their ends inclusive). */
function outsideStale(segment: SettledSegment, stale: Interval[]): SettledSegment[] {
  const parts: SettledSegment[] = [];
  let cursor = segment.start;
  for (const range of mergeIntervals(stale.map((r) => ({ start: r.start, end: r.end + 1 })))) {
    const start = Math.max(range.start, cursor);
    const end = Math.min(range.end, segment.end);
    if (start >= end) continue;
    if (cursor < start) parts.push({ ...segment, start: cursor, end: start, settled: true });
    parts.push({ ...segment, start, end, settled: false });
    cursor = end;
  }
  if (cursor < segment.end) parts.push({ ...segment, start: cursor, settled: true });
  return parts;
}

/** Everything a settled run's text depends on: its grid, bounds, sources and revision. */
function runKey(request: CandleRequest, shape: ItemShape, plan: Plan, run: Run): string {
  const sources = clip(plan.segments, run.start, run.end)
    .map((segment) => `${segment.source}:${segment.start}-${segment.end}`)
    .join(',');
  return [
    shape,
    request.fill,
    request.code,
    request.intervalSeconds,
    gridOrigin(request),
    run.start,
    run.end,
    plan.freshness.revision,
    sources,
  ].join('|');
}

/** A window answered in one statement (zones, carrying fills), its rows numbered into runs. */
async function wholeJson(
  pool: DatabasePool,
  request: CandleRequest,
  plan: Plan,
): Promise<JsonAnswer> {
  const query = numberedRunsQuery(
    sql.fragment`SELECT bucket, ${CANDLE_IS_EMPTY} AS is_empty, ${CANDLE_ITEM} AS item
      FROM (${answerRows(request, plan.segments, plan.seeds)}) AS candle`,
  );
  const chunks = await withZoneErrors(request, () =>
    needsSortedGrouping(request, plan.segments)
      ? sortedGrouping(pool, (tx) => tx.any(query))
      : pool.any(query),
  );
  return {
    pieces: jsonArrayPieces(chunks.map((chunk) => chunk.items)),
    empty: chunks.every((chunk) => chunk.empty),
  };
}

/**
 * Whether one statement re-buckets enough buckets for a hash aggregate to spill (answers run by
 * run never do: a run holds at most RUN_BUCKETS).
 */
function needsSortedGrouping(request: CandleRequest, segments: Segment[]): boolean {
  const merged = segments.filter((segment) => !passesThrough(request, segment));
  const span = merged.reduce((sum, segment) => sum + (segment.end - segment.start), 0);
  return span / 1000 / request.intervalSeconds > RUN_BUCKETS;
}

/**
 * Runs a query with sort-based grouping. The planner cannot estimate how many buckets
 * time_bucket yields and sizes a hash aggregate for 200; first()/last() states then spill to disk
 * on answers of thousands of buckets, while sorting a few thousand sub-buckets is cheap.
 */
function sortedGrouping<T>(
  pool: DatabasePool,
  run: (tx: DatabaseTransactionConnection) => Promise<T>,
): Promise<T> {
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SET LOCAL enable_hashagg = off`);
    return run(tx);
  });
}

/**
 * Streams the same answer as queryCandlesJson row by row through a cursor, so memory stays flat
 * whatever the window. The transaction raises the statement timeout for this query only: a
 * cursor read by a slow client may legitimately stay open for minutes, but a runaway export
 * (centuries at one-second buckets) must still end.
 */
export async function streamCandles(
  pool: DatabasePool,
  request: CandleRequest,
  consume: (rows: AsyncIterable<CandleRow>) => Promise<void>,
  options: QueryOptions = {},
): Promise<void> {
  const { segments, seeds } = await planRequest(pool, request, options);
  let consumed: Promise<void> = Promise.resolve();
  await withZoneErrors(request, () =>
    pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`SET LOCAL statement_timeout = '15min'`);
      await tx.query(sql.unsafe`SET LOCAL enable_hashagg = off`);
      await tx.stream(candleQuery(request, segments, seeds), (stream) => {
        consumed = consume(rowsOf(stream));
        consumed.catch((error: unknown) => stream.destroy(error as Error));
      });
    }),
  );
  // The cursor is closed once the last row is buffered; the consumer may still be writing.
  await consumed;
}

async function* rowsOf(
  stream: AsyncIterable<{ data: z.infer<typeof candleWireRow> }>,
): AsyncIterable<CandleRow> {
  for await (const item of stream) yield fromWire(item.data);
}

/** PostgreSQL's and the runtime's zone lists can differ; a zone only the runtime knows is a 400. */
async function withZoneErrors<T>(request: CandleRequest, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const message = String((error as { cause?: { message?: string } }).cause?.message ?? error);
    if (request.timeZone && /time zone .* not recognized/.test(message)) {
      throw new ValidationError(`Unknown time zone '${request.timeZone}'`, [
        { path: 'query.tz', message: 'not a time zone the database knows' },
      ]);
    }
    throw error;
  }
}

const ts = (ms: number | Date) =>
  sql.fragment`${new Date(typeof ms === 'number' ? ms : ms.getTime()).toISOString()}::timestamptz`;

function bucketWidth(request: CandleRequest) {
  return sql.fragment`make_interval(secs => ${request.intervalSeconds}::float8)`;
}

/** time_bucket of a timestamptz expression on the request's grid. */
function bucketOf(request: CandleRequest, value: SqlFragment): SqlFragment {
  const width = bucketWidth(request);
  const offset = request.offsetSeconds ?? 0;
  if (!request.timeZone) {
    const origin = (request.origin?.getTime() ?? 0) + offset * 1000;
    return sql.fragment`time_bucket(${width}, ${value}, ${ts(origin)})`;
  }
  const origin = request.origin ? ts(request.origin) : sql.fragment`NULL::timestamptz`;
  return sql.fragment`time_bucket(${width}, ${value}, ${request.timeZone}::text,
    origin => ${origin}, "offset" => make_interval(secs => ${offset}::float8))`;
}

function segmentSource(code: string, segment: Segment, run?: RunBounds): SqlFragment {
  if (segment.source === 'raw') {
    return sql.fragment`
      SELECT time AS t, open, high, low, close, volume, 1::bigint AS count,
             time AS first_time, time AS last_time
      FROM price_observations
      WHERE currency_code = ${code} AND time >= ${ts(segment.start)} AND time < ${ts(segment.end)}
        ${withinRun(sql.fragment`time`, run)}`;
  }
  const level = levelOf(segment);
  return sql.fragment`
    SELECT bucket AS t, open, high, low, close, volume, count, first_time, last_time
    FROM ${sql.identifier([level.relation])}
    WHERE currency_code = ${code} AND bucket >= ${ts(segment.start)} AND bucket < ${ts(segment.end)}
      ${withinRun(sql.fragment`bucket`, run)}`;
}

/**
 * Keeps a source's rows to one run. Runs start and end on bucket boundaries of the request
 * (but for the window's own ends), and level rows nest inside the request's buckets, so a
 * bucket's rows all fall in the same run.
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
): SqlFragment {
  if (shape === 'open') {
    return sql.fragment`
      SELECT count(*) = 0 AS empty, string_agg(${OPEN_ITEM}, ',' ORDER BY bucket) AS items
      FROM (${bucketRows(request, segments, 'open', RUN)}) AS buckets`;
  }
  return sql.fragment`
    SELECT bool_and(${CANDLE_IS_EMPTY}) AS empty, string_agg(${CANDLE_ITEM}, ',' ORDER BY bucket) AS items
    FROM (${answerRows(request, segments, seeds, RUN)}) AS candle`;
}

/**
 * The given runs, each computed and aggregated on its own by `perRun` (its sources reading only
 * its rows): one row per run, in order. Cheaper than numbering a whole answer's rows and
 * sorting them into runs, and no run groups enough buckets for a hash aggregate to spill.
 */
function runsQuery(runs: readonly Run[], perRun: SqlFragment) {
  const instants = (pick: 'start' | 'end') =>
    sql.array(
      runs.map((run) => new Date(run[pick]).toISOString()),
      'timestamptz',
    );
  return sql.type(jsonChunk)`
    SELECT run.lo, run.hi, coalesce(answer.empty, true) AS empty, coalesce(answer.items, '') AS items
    FROM unnest(${instants('start')}, ${instants('end')}) WITH ORDINALITY AS run(lo, hi, n)
    CROSS JOIN LATERAL (${perRun}) AS answer
    ORDER BY run.n`;
}

/**
 * An answer whose runs cannot be cut in time (buckets of a zone's days, fills that carry values
 * across buckets): its rows (bucket, is_empty, item) are numbered in order and grouped by runs
 * of RUN_BUCKETS.
 */
function numberedRunsQuery(rows: SqlFragment) {
  return sql.type(jsonChunk)`
    SELECT bool_and(is_empty) AS empty, string_agg(item, ',' ORDER BY bucket) AS items
    FROM (SELECT *, ${CHUNK} AS chunk FROM (${rows}) AS numbered) AS items
    GROUP BY chunk ORDER BY chunk`;
}

/**
 * Sub-buckets from the planned sources, merged exactly into the request's buckets (open = first
 * open by observation time, close = last close, extremes, sums), then gap-filled over the grid of
 * bucket starts: one row per bucket (`bucket` and the candle's columns), in no particular order.
 */
function answerRows(
  request: CandleRequest,
  segments: Segment[],
  seeds: FillSeeds,
  run?: RunBounds,
): SqlFragment {
  const data = bucketRows(request, segments, 'ohlcv', run);
  if (request.fill === 'none') return data;
  const joined = sql.fragment`
    data AS (${data}),
    grid AS (${gridQuery(request, run)}),
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
    return sql.fragment`
      WITH ${joined},
      marked AS (SELECT *, count(close) OVER (ORDER BY bucket) AS run FROM joined),
      filled AS (
        SELECT *, coalesce(first_value(close) OVER (PARTITION BY run ORDER BY bucket),
                           ${seedClose(seeds.before)}) AS carried
        FROM marked
      )
      SELECT bucket,
             coalesce(open, carried) AS open, coalesce(high, carried) AS high,
             coalesce(low, carried) AS low, coalesce(close, carried) AS close, volume, count
      FROM filled`;
  }
  return sql.fragment`
    WITH ${joined},
    marked AS (
      SELECT *, count(close) OVER (ORDER BY bucket) AS prev_run,
                count(close) OVER (ORDER BY bucket DESC) AS next_run
      FROM joined
    ),
    anchored AS (
      SELECT m.*,
             CASE WHEN prev_run = 0 THEN ${seedClose(seeds.before)}
                  ELSE first_value(close) OVER (PARTITION BY prev_run ORDER BY bucket) END AS y0,
             CASE WHEN prev_run = 0 THEN ${seedTime(seeds.before)}
                  ELSE first_value(bucket) OVER (PARTITION BY prev_run ORDER BY bucket) END AS x0,
             CASE WHEN next_run = 0 THEN ${seedClose(seeds.after)}
                  ELSE first_value(close) OVER (PARTITION BY next_run ORDER BY bucket DESC) END AS y1,
             CASE WHEN next_run = 0 THEN ${seedTime(seeds.after)}
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
    )
    SELECT bucket,
           coalesce(open, line) AS open, coalesce(high, line) AS high,
           coalesce(low, line) AS low, coalesce(close, line) AS close, volume, count
    FROM interpolated`;
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
 * hourly buckets without a zone) already are answers and pass straight through; everything
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
        ${withinRun(sql.fragment`bucket`, run)}`,
  );
  const rest = segments.filter((segment) => !isDirect(segment));
  const merged = rest.length
    ? [
        sql.fragment`
          SELECT ${bucketOf(request, sql.fragment`t`)} AS bucket, ${AGGREGATES[shape]}
          FROM (${sql.join(
            rest.map((segment) => segmentSource(request.code, segment, run)),
            sql.fragment` UNION ALL `,
          )}) AS parts
          GROUP BY 1`,
      ]
    : [];
  return sql.join([...direct, ...merged], sql.fragment` UNION ALL `);
}

function passesThrough(request: CandleRequest, segment: Segment): boolean {
  return (
    !request.timeZone &&
    segment.source !== 'raw' &&
    levelOf(segment).seconds === request.intervalSeconds
  );
}

function levelOf(segment: Segment) {
  return LEVELS.find((l) => l.name === segment.source)!;
}

const seedClose = (point: SeedPoint | null) => sql.fragment`${point?.close ?? null}::float8`;
const seedTime = (point: SeedPoint | null) => sql.fragment`${point?.time ?? null}::timestamptz`;

/**
 * Start of every bucket that overlaps [from, to) and has begun by now: a fill never invents
 * candles for time still to come, however far a window reaches (buckets holding data, stored up
 * to PRICE_MAX_FUTURE_SECONDS ahead, still come from the data side of the join). In a zone the
 * grid is walked in local wall-clock time and each step mapped back through the same
 * time_bucket, so DST days get their 23 or 25 hours and every start matches the data's buckets.
 */
function gridQuery(request: CandleRequest, run?: RunBounds): SqlFragment {
  const width = bucketWidth(request);
  const first = bucketOf(request, ts(request.from));
  const lastStart = (end: SqlFragment) =>
    sql.fragment`least(${end} - interval '1 microsecond', now())`;
  if (run) {
    return sql.fragment`
      SELECT generate_series(${bucketOf(request, run.lo)}, ${lastStart(run.hi)}, ${width}) AS bucket`;
  }
  if (!request.timeZone) {
    return sql.fragment`
      SELECT generate_series(${first}, ${lastStart(ts(request.to))}, ${width}) AS bucket`;
  }
  const zone = sql.fragment`${request.timeZone}::text`;
  return sql.fragment`
    SELECT DISTINCT ${bucketOf(request, sql.fragment`(local AT TIME ZONE ${zone})`)} AS bucket
    FROM generate_series((${first}) AT TIME ZONE ${zone}, ${ts(request.to)} AT TIME ZONE ${zone}, ${width}) AS local
    WHERE ${bucketOf(request, sql.fragment`(local AT TIME ZONE ${zone})`)} < ${ts(request.to)}
      AND ${bucketOf(request, sql.fragment`(local AT TIME ZONE ${zone})`)} <= now()`;
}

/** Upper bound of the number of buckets a request can produce (for the point cap). */
export function maxBuckets(request: CandleRequest): number {
  const span = (request.to.getTime() - request.from.getTime()) / 1000;
  return Math.ceil(span / request.intervalSeconds) + 1;
}
