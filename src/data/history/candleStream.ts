import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { bucketStartMs } from '../../shared/time/bucketGrid.ts';
import { candleQuery, fromWire, type candleWireRow, type CandleRow } from './answerSql.ts';
import { withZoneErrors, type QueryOptions } from './candleQuery.ts';
import type { FillSeeds } from './fillSeeds.ts';
import { bucketSql, ts } from './gridSql.ts';
import { planRequest, type Plan } from './plan.ts';
import type { CandleRequest } from './request.ts';
import { clip } from './runs.ts';

// The export's row stream. A window is answered slice after slice of whole buckets, each slice
// one short statement, so the first rows leave at once whatever the window: as one statement, a
// year at one-second buckets (31.5 M rows) was sorted and window-functioned whole before its
// first row came out (110 s of silence). The 'previous' fill is carried from slice to slice; the
// rows are exactly those of the one-statement answer (test/data/exportStreaming.test.ts).

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
      if (request.fill === 'linear') return streamWholeWindow(tx, request, plan, consume);
      return consume(sliceBySlice(tx, request, plan, sliceBuckets));
    }),
  );
}

/**
 * A 'linear' fill interpolates towards the next observation, which may lie any number of slices
 * ahead: it stays one statement, read through a cursor. Its statement timeout is raised for it
 * alone: a cursor read by a slow client may legitimately stay open for minutes, but a runaway
 * one must still end.
 */
async function streamWholeWindow(
  tx: DatabaseTransactionConnection,
  request: CandleRequest,
  plan: Plan,
  consume: (rows: AsyncIterable<CandleRow>) => Promise<void>,
): Promise<void> {
  await tx.query(sql.unsafe`SET LOCAL statement_timeout = '15min'`);
  let consumed: Promise<void> = Promise.resolve();
  await tx.stream(candleQuery(request, plan.segments, plan.seeds), (stream) => {
    consumed = consume(rowsOf(stream));
    consumed.catch((error: unknown) => stream.destroy(error as Error));
  });
  // The cursor is closed once the last row is buffered; the consumer may still be writing.
  await consumed;
}

async function* rowsOf(
  stream: AsyncIterable<{ data: z.infer<typeof candleWireRow> }>,
): AsyncIterable<CandleRow> {
  for await (const item of stream) yield fromWire(item.data);
}

/** The window's rows, slice by slice, carrying the last close into the next slice's fill. */
async function* sliceBySlice(
  tx: DatabaseTransactionConnection,
  request: CandleRequest,
  plan: Plan,
  sliceBuckets: number,
): AsyncIterable<CandleRow> {
  let seeds: FillSeeds = plan.seeds;
  let from = request.from;
  while (from.getTime() < request.to.getTime()) {
    const to = await sliceEnd(tx, request, from, sliceBuckets);
    const slice = { ...request, from, to };
    const segments = clip(plan.segments, from.getTime(), to.getTime());
    const wire = await tx.any(candleQuery(slice, segments, seeds));
    const last = wire.at(-1);
    // The last close of a slice, observed or carried, is what the next slice carries on.
    if (last && last.close !== null) {
      seeds = {
        ...seeds,
        before: { time: new Date(last.timestamp).toISOString(), close: last.close },
      };
    }
    for (const row of wire) yield fromWire(row);
    from = to;
  }
}

const cutRow = z.object({ cut: z.date() });

/**
 * Where the slice starting at `from` ends: a bucket boundary about `sliceBuckets` buckets on,
 * or the window's end. In a zone the boundaries follow its wall clock, so the database's
 * time_bucket (the grid's one definition, gridSql.ts) places the cut.
 */
async function sliceEnd(
  tx: DatabaseTransactionConnection,
  request: CandleRequest,
  from: Date,
  sliceBuckets: number,
): Promise<Date> {
  const candidate = from.getTime() + sliceBuckets * request.intervalSeconds * 1000;
  if (candidate >= request.to.getTime()) return request.to;
  const cut = request.timeZone
    ? (await tx.one(sql.type(cutRow)`SELECT ${bucketSql(request, ts(candidate))} AS cut`)).cut
    : new Date(bucketStartMs(request, candidate));
  // A cut at or before the slice's start (never for slices of several buckets) would not move.
  return cut.getTime() > from.getTime() ? cut : request.to;
}
