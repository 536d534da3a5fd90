import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { bucketStartMs, followsWallClock } from '../../shared/time/bucketGrid.ts';
import {
  candleQuery,
  firstDataBucketQuery,
  firstSourceTimeQuery,
  fromWire,
  type CandleRow,
} from './answerSql.ts';
import { withZoneErrors, type QueryOptions } from './candleQuery.ts';
import type { FillSeeds, SeedPoint } from './fillSeeds.ts';
import { bucketSql, ts } from './gridSql.ts';
import { planRequest, type Plan } from './plan.ts';
import type { CandleRequest } from './request.ts';
import { clip } from './runs.ts';

// The export's row stream. A window is answered slice after slice of whole buckets, each slice
// one short statement, so the first rows leave at once whatever the window: as one statement, a
// year at one-second buckets (31.5 M rows) was sorted and window-functioned whole before its
// first row came out (110 s of silence). The fills carry on across slices: each slice is seeded
// with the last bucket holding data before it and, for 'linear', the first one after it (found
// by index probes, however far ahead), so the rows are exactly those of the one-statement answer
// (test/data/exportStreaming.test.ts).

/** Buckets per slice: a statement of a few tens of milliseconds, a few MB of rows in memory. */
export const SLICE_BUCKETS = 20_000;

export interface StreamOptions extends QueryOptions {
  /** Buckets per slice (tests use small slices to cross many slice boundaries). */
  sliceBuckets?: number;
}

/**
 * Streams the same answer as queryCandlesJson row by row. Every slice reads in one transaction
 * (one snapshot, one now()), pulled only as fast as `consume` reads, so memory stays flat
 * whatever the window and a client that leaves stops the work between two slices (or cancels
 * the running one, see shared/abandonment.ts).
 */
export async function streamCandles(
  pool: DatabasePool,
  request: CandleRequest,
  consume: (rows: AsyncIterable<CandleRow>) => Promise<void>,
  options: StreamOptions = {},
): Promise<void> {
  const plan = await planRequest(pool, request, options);
  const sliceBuckets = options.sliceBuckets ?? SLICE_BUCKETS;
  await withZoneErrors(request, () =>
    pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`);
      // Sort-based grouping: see candleQuery.ts sortedGrouping.
      await tx.query(sql.unsafe`SET LOCAL enable_hashagg = off`);
      return consume(sliceBySlice(tx, request, plan, sliceBuckets));
    }),
  );
}

/** The window's rows, slice by slice, each seeded with the data around it. */
async function* sliceBySlice(
  tx: DatabaseTransactionConnection,
  request: CandleRequest,
  plan: Plan,
  sliceBuckets: number,
): AsyncIterable<CandleRow> {
  const ahead = request.fill === 'linear' ? new NextDataBucket(tx, request, plan) : undefined;
  let before = plan.seeds.before;
  let from = request.from;
  while (from.getTime() < request.to.getTime()) {
    const to = await sliceEnd(tx, request, from, sliceBuckets);
    const slice = { ...request, from, to };
    const seeds: FillSeeds = { before, after: (await ahead?.after(to)) ?? plan.seeds.after };
    const segments = clip(plan.segments, from.getTime(), to.getTime());
    const wire = await tx.any(candleQuery(slice, segments, seeds));
    // A fill carries the last bucket holding data (its start and close) into the next slices, as
    // the one statement carries it across the same buckets.
    const lastHolding = wire.findLast((row) => row.count > 0 && row.close !== null);
    if (lastHolding) before = seedOf(lastHolding.timestamp, lastHolding.close!);
    for (const row of wire) yield fromWire(row);
    from = to;
  }
}

const seedOf = (bucketMs: number, close: number): SeedPoint => ({
  time: new Date(bucketMs).toISOString(),
  close,
});

/**
 * The first bucket holding data at or after a slice's end, which a 'linear' fill interpolates
 * towards (the observation after the window when there is none). Found once per gap: it stays
 * the answer for every slice that ends before it.
 */
class NextDataBucket {
  private found: { bucketMs: number; seed: SeedPoint } | undefined;
  /** No data from here to the window's end. */
  private noneFrom = Infinity;

  private readonly tx: DatabaseTransactionConnection;
  private readonly request: CandleRequest;
  private readonly plan: Plan;

  constructor(tx: DatabaseTransactionConnection, request: CandleRequest, plan: Plan) {
    this.tx = tx;
    this.request = request;
    this.plan = plan;
  }

  async after(start: Date): Promise<SeedPoint | null> {
    const from = start.getTime();
    const end = this.request.to.getTime();
    if (from >= end || from >= this.noneFrom) return this.plan.seeds.after;
    if (this.found && this.found.bucketMs >= from) return this.found.seed;
    const rest = clip(this.plan.segments, from, end);
    const first =
      rest.length > 0
        ? (await this.tx.one(firstSourceTimeQuery(this.request.code, rest))).first
        : null;
    if (!first) {
      this.noneFrom = from;
      return this.plan.seeds.after;
    }
    // The bucket holding that first row holds all its rows within about a bucket of it (on a
    // wall-clock grid, a change of offset more: a day may last 25 hours).
    const change = followsWallClock(this.request) ? OFFSET_CHANGE_MS : 0;
    const reach = 2 * this.request.intervalSeconds * 1000 + change;
    const probe = clip(this.plan.segments, from, Math.min(end, first.getTime() + reach));
    const bucket = await this.tx.one(firstDataBucketQuery(this.request, probe));
    this.found = {
      bucketMs: bucket.bucket.getTime(),
      seed: seedOf(bucket.bucket.getTime(), bucket.close),
    };
    return this.found.seed;
  }
}

/**
 * Where the slice starting at `from` ends: a bucket boundary about `sliceBuckets` buckets on,
 * or the window's end.
 */
async function sliceEnd(
  tx: DatabaseTransactionConnection,
  request: CandleRequest,
  from: Date,
  sliceBuckets: number,
): Promise<Date> {
  const end = request.to.getTime();
  const candidate = from.getTime() + sliceBuckets * request.intervalSeconds * 1000;
  if (candidate >= end) return request.to;
  const cut = followsWallClock(request)
    ? await zoneCut(tx, request, candidate)
    : new Date(bucketStartMs(request, candidate));
  // A cut at or before the slice's start (never for slices of several buckets) would not move.
  return cut && cut.getTime() > from.getTime() ? cut : request.to;
}

const zoneCutRow = z.object({ cut: z.date(), steady: z.boolean() });

/** Longer than any change of a zone's UTC offset (one hour mostly, two at most). */
const OFFSET_CHANGE_MS = 2 * 3_600_000;

/**
 * A cut of a wall-clock grid at or after `candidate`, placed by the database's time_bucket (the
 * grid's SQL form, gridSql.ts), and only where the zone's UTC offset stays the same for a bucket
 * and more on either side, so that no cut is placed by an ambiguous wall-clock time. Undefined
 * when the window ends first.
 */
async function zoneCut(
  tx: DatabaseTransactionConnection,
  request: CandleRequest,
  candidate: number,
): Promise<Date | undefined> {
  const margin = request.intervalSeconds * 1000 + OFFSET_CHANGE_MS;
  const zone = sql.fragment`${request.timeZone!}::text`;
  const offsetAt = (shift: number) =>
    sql.fragment`((cut + make_interval(secs => ${shift / 1000}::float8)) AT TIME ZONE ${zone})
      - ((cut + make_interval(secs => ${shift / 1000}::float8)) AT TIME ZONE 'UTC')`;
  for (let at = candidate; at < request.to.getTime(); at += 2 * margin) {
    const { cut, steady } = await tx.one(sql.type(zoneCutRow)`
      SELECT cut, ${offsetAt(-margin)} = ${offsetAt(margin)} AS steady
      FROM (SELECT ${bucketSql(request, ts(at))} AS cut) AS c`);
    if (steady) return cut;
  }
  return undefined;
}
