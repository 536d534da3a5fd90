import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { ValidationError } from '../../shared/errors.ts';
import { fixedEquivalent, followsWallClock, utcOriginMs } from '../../shared/time/bucketGrid.ts';
import { answerRows, numberedRunsQuery, passesThrough, runsJsonQuery } from './answerSql.ts';
import {
  CANDLE_IS_EMPTY,
  candleItem,
  FORMAT_VERSION,
  jsonArrayPieces,
  type ItemShape,
} from './jsonText.ts';
import type { Segment } from './planner.ts';
import { planRequest, settledSegments, type Plan } from './plan.ts';
import { carriesValues, type CandleRequest } from './request.ts';
import type { RunCache } from './runCache.ts';
import { filledRunTexts } from './filledRuns.ts';
import { batchRuns, clip, planRuns, RUN_BUCKETS, type Run } from './runs.ts';

// A history request's JSON answer, from plan to body, as the routes send it (run by run, kept
// runs reused); the export's row stream is candleStream.ts.

/** A whole answer as the JSON text of a response body, in pieces to write one after another. */
export interface JsonAnswer {
  pieces: Array<string | Buffer>;
  /** No bucket holds an observation or a filled value (the routes answer 204). */
  empty: boolean;
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
  const grid = onFixedGridWherePossible(request);
  const plan = await planRequest(pool, grid, options);
  // A zone's days and weeks across a change of its offset follow its wall clock: one statement
  // numbers them into runs.
  if (followsWallClock(grid)) return wholeJson(pool, grid, plan);
  return jsonByRuns(pool, grid, plan, 'candle', options.cache);
}

/**
 * The request on its fixed grid where its zone keeps one offset over the window (bucketGrid.ts
 * fixedEquivalent): the same buckets, answered run by run (kept, two statements at once) and
 * grouped without converting every row to the zone's wall clock.
 */
function onFixedGridWherePossible(request: CandleRequest): CandleRequest {
  const fixed = fixedEquivalent(request, request);
  if (!fixed) return request;
  const { timeZone: _zone, origin: _origin, offsetSeconds: _offset, ...rest } = request;
  return { ...rest, ...fixed };
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
/** The body made of the runs' texts, in order. */
function jsonAnswer(runs: readonly RunText[]): JsonAnswer {
  return {
    pieces: jsonArrayPieces(runs.map((run) => run.items)),
    empty: runs.every((run) => run.empty),
  };
}

/** A fetched run's text and the currency's revision as of the rows it was made from. */
type FetchedRun = RunText & { revision: number };

/**
 * An answer on a fixed UTC grid, run by run (see planRuns): settled runs come from the cache
 * when it holds them, the others are computed (computeRuns), and the settled ones among those
 * are kept.
 */
async function jsonByRuns(
  pool: DatabasePool,
  request: CandleRequest,
  plan: Plan,
  shape: ItemShape,
  cache: RunCache | undefined,
): Promise<JsonAnswer> {
  const runs = planRuns(request, settledSegments(plan.segments, plan.freshness));
  const keys = runs.map((run) => (cache && run.settled ? runKey(request, shape, plan, run) : null));
  if (carriesValues(request)) {
    const filled = await withZoneErrors(request, () =>
      filledRunTexts(pool, request, plan, runs, {
        lookUp: (i) => (keys[i] ? cache!.get(keys[i]) : undefined),
        keep: (i, text) => keptIfCurrent(cache, keys[i] ?? null, plan, text),
      }),
    );
    return jsonAnswer(filled);
  }
  const kept = keys.map((key) => (key === null ? undefined : cache!.get(key)));
  const toCompute = runs.filter((_, index) => !kept[index]);
  const found = new Map(await computeRuns(pool, request, plan, shape, toCompute));
  return jsonAnswer(
    runs.map(
      (run, index) =>
        kept[index] ?? keptIfCurrent(cache, keys[index] ?? null, plan, found.get(run)!),
    ),
  );
}

/**
 * A computed run's text, kept when it has a key and was made at the revision of its key: the plan
 * and the rows are read by separate statements, and a recomputed backfill may commit (or be
 * replayed, on a replica) between them; its text is right for this answer but not for the
 * plan's revision. Encoded once: the body then takes the kept Buffer as it is.
 */
function keptIfCurrent(
  cache: RunCache | undefined,
  key: string | null,
  plan: Plan,
  text: FetchedRun,
): RunText {
  return cache && key && text.revision === plan.freshness.revision ? keep(cache, key, text) : text;
}

function keep(cache: RunCache, key: string, text: RunText): RunText {
  const kept = { items: Buffer.from(text.items), empty: text.empty };
  cache.set(key, kept);
  return kept;
}

/**
 * Computes runs of an answer on a fixed grid, in up to two batches of consecutive runs on separate
 * connections at once (see batchRuns).
 */
async function computeRuns(
  pool: DatabasePool,
  request: CandleRequest,
  plan: Plan,
  shape: ItemShape,
  runs: readonly Run[],
): Promise<Array<[Run, FetchedRun]>> {
  const batches = batchRuns(runs, request);
  const results = await Promise.all(
    batches.map((batch) => {
      const query = runsJsonQuery(request, plan.segments, plan.seeds, shape, batch);
      return withZoneErrors(request, () => pool.any(query));
    }),
  );
  return batches.flatMap((batch, b) =>
    batch.map((run, i): [Run, FetchedRun] => [run, results[b]![i]!]),
  );
}

/**
 * Everything a settled run's text depends on: the code's answer format, its grid, bounds,
 * sources and revision.
 */
function runKey(request: CandleRequest, shape: ItemShape, plan: Plan, run: Run): string {
  const sources = clip(plan.segments, run.start, run.end)
    .map((segment) => `${segment.source}:${segment.start}-${segment.end}`)
    .join(',');
  return [
    FORMAT_VERSION,
    shape,
    request.fill,
    request.code,
    request.intervalSeconds,
    utcOriginMs(request),
    run.start,
    run.end,
    plan.freshness.revision,
    sources,
  ].join('|');
}

/** A window answered in one statement (a zone's days and weeks), its rows numbered into runs. */
async function wholeJson(
  pool: DatabasePool,
  request: CandleRequest,
  plan: Plan,
): Promise<JsonAnswer> {
  const query = numberedRunsQuery(
    sql.fragment`SELECT bucket, ${CANDLE_IS_EMPTY} AS is_empty, ${candleItem(request)} AS item
      FROM (${answerRows(request, plan.segments, plan.seeds)}) AS candle`,
  );
  const chunks = await withZoneErrors(request, () =>
    needsSortedGrouping(request, plan.segments)
      ? sortedGrouping(pool, (tx) => tx.any(query))
      : pool.any(query),
  );
  return jsonAnswer(chunks);
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

/** PostgreSQL's and the runtime's zone lists can differ; a zone only the runtime knows is a 400. */
export async function withZoneErrors<T>(request: CandleRequest, run: () => Promise<T>): Promise<T> {
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
