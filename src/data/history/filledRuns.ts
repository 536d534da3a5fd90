import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import {
  answerRows,
  instants,
  LATERAL_RUN,
  revisedRunTextRow,
  revisionOf,
  type SeedSql,
} from './answerSql.ts';
import type { FillSeeds, SeedPoint } from './fillSeeds.ts';
import { CANDLE_IS_EMPTY, candleItem } from './jsonText.ts';
import { mergeAdjacent, type Segment } from './planner.ts';
import type { Plan } from './plan.ts';
import type { CandleRequest } from './request.ts';
import { batchRuns, clip, type Run } from './runs.ts';

// A carrying fill ('previous', 'linear') on a grid fixed in time, answered run by run like any
// other answer (two statements at once, runs.ts) although its values cross every bucket. A run
// needs from outside itself only what fills its leading empty buckets (the last bucket holding
// data before it) and, for 'linear', its trailing ones (the first holding data after it): the
// window's own seeds (fillSeeds.ts) at its ends. So every run is first computed with the seeds
// it already knows (the window's, at the window's ends) and reports where it holds data; the
// runs that start or end empty are computed again, seeded from their neighbours' data buckets,
// stamped with their starts as the one-statement answer stamps them. On market data, where
// buckets are rarely empty, the second pass is mostly nothing. Runs of a fill are not kept
// between requests: their text depends on data outside them.

/** Each run's own seeds, given beside its bounds (see filledRunsJsonQuery). */
const RUN_SEEDS: SeedSql = {
  beforeClose: sql.fragment`run.before_close`,
  beforeTime: sql.fragment`run.before_time`,
  afterClose: sql.fragment`run.after_close`,
  afterTime: sql.fragment`run.after_time`,
};

/**
 * Where a run of a carrying fill holds data: its first and last buckets, and its first and last
 * buckets holding data with their closes (null: none), which seed the fills of the runs around
 * it.
 */
const filledRunRow = revisedRunTextRow.extend({
  firstBucket: z.date().nullable(),
  lastBucket: z.date().nullable(),
  firstData: z.date().nullable(),
  firstClose: z.number().nullable(),
  lastData: z.date().nullable(),
  lastClose: z.number().nullable(),
});

/**
 * The same as runsJsonQuery for a carrying fill ('previous', 'linear'): each run is filled from
 * its own seeds, given beside its bounds, and answers where it holds data.
 */
function filledRunsJsonQuery(
  request: CandleRequest,
  segments: readonly Segment[],
  runs: ReadonlyArray<Run & { seeds: FillSeeds }>,
) {
  const own = mergeAdjacent(runs.flatMap((run) => clip(segments, run.start, run.end)));
  const rows = answerRows(request, own, RUN_SEEDS, LATERAL_RUN);
  const perRun = sql.fragment`
    SELECT bool_and(${CANDLE_IS_EMPTY}) AS empty,
           string_agg(${candleItem(request)}, ',' ORDER BY bucket) AS items,
           min(bucket) AS "firstBucket", max(bucket) AS "lastBucket",
           min(bucket) FILTER (WHERE count > 0) AS "firstData",
           first(close, bucket) FILTER (WHERE count > 0) AS "firstClose",
           max(bucket) FILTER (WHERE count > 0) AS "lastData",
           last(close, bucket) FILTER (WHERE count > 0) AS "lastClose"
    FROM (${rows}) AS candle`;
  const seedArray = (side: 'before' | 'after', pick: 'time' | 'close') =>
    sql.array(
      runs.map((run) => run.seeds[side]?.[pick] ?? null),
      pick === 'time' ? 'timestamptz' : 'float8',
    );
  return sql.type(filledRunRow)`
    SELECT coalesce(answer.empty, true) AS empty, coalesce(answer.items, '') AS items,
           ${revisionOf(request.code)} AS revision, answer."firstBucket", answer."lastBucket",
           answer."firstData", answer."firstClose", answer."lastData", answer."lastClose"
    FROM unnest(${instants(runs, 'start')}, ${instants(runs, 'end')},
                ${seedArray('before', 'time')}, ${seedArray('before', 'close')},
                ${seedArray('after', 'time')}, ${seedArray('after', 'close')})
         WITH ORDINALITY AS run(lo, hi, before_time, before_close, after_time, after_close, n)
    CROSS JOIN LATERAL (${perRun}) AS answer
    ORDER BY run.n`;
}

/** A run's text, and where it holds data. */
type FilledRun = z.infer<typeof filledRunRow>;

/** The runs' JSON texts (items joined by commas) and whether each is empty, in order. */
export async function filledRunTexts(
  pool: DatabasePool,
  request: CandleRequest,
  plan: Plan,
  runs: readonly Run[],
): Promise<Array<{ items: string; empty: boolean }>> {
  const known = runs.map((_, i) => ({
    before: i === 0 ? plan.seeds.before : null,
    after: i === runs.length - 1 ? plan.seeds.after : null,
  }));
  const first = await compute(pool, request, plan.segments, runs, known);
  const again = runs.flatMap((run, i) =>
    needsNeighbours(request, first, i)
      ? [{ ...run, seeds: neighbourSeeds(plan, first, i), i }]
      : [],
  );
  const second = await compute(
    pool,
    request,
    plan.segments,
    again,
    again.map((run) => run.seeds),
  );
  for (const [j, run] of again.entries()) first[run.i] = second[j]!;
  return first;
}

/** The runs computed with the given seeds, in up to two batches at once (runs.ts batchRuns). */
async function compute(
  pool: DatabasePool,
  request: CandleRequest,
  segments: readonly Segment[],
  runs: readonly Run[],
  seeds: readonly FillSeeds[],
): Promise<FilledRun[]> {
  const seeded = runs.map((run, i) => ({ ...run, seeds: seeds[i]! }));
  const batches = batchRuns(seeded, request) as Array<typeof seeded>;
  const results = await Promise.all(
    batches.map((batch) => pool.any(filledRunsJsonQuery(request, segments, batch))),
  );
  return results.flat();
}

/** Whether a run starts with empty buckets (after the first run) or, for 'linear', ends so. */
function needsNeighbours(request: CandleRequest, runs: readonly FilledRun[], i: number): boolean {
  const run = runs[i]!;
  if (run.firstBucket === null) return false;
  const leading = run.firstData === null || run.firstData.getTime() > run.firstBucket.getTime();
  const trailing = run.lastData === null || run.lastData.getTime() < run.lastBucket!.getTime();
  return (i > 0 && leading) || (request.fill === 'linear' && i < runs.length - 1 && trailing);
}

/**
 * The seeds of run i from the runs around it: the last bucket holding data before it and the
 * first after it, or the window's own seeds where no run holds one.
 */
function neighbourSeeds(plan: Plan, runs: readonly FilledRun[], i: number): FillSeeds {
  const before = runs.slice(0, i).findLast((run) => run.lastData !== null);
  const after = runs.slice(i + 1).find((run) => run.firstData !== null);
  return {
    before: before ? seedOf(before.lastData!, before.lastClose!) : plan.seeds.before,
    after: after ? seedOf(after.firstData!, after.firstClose!) : plan.seeds.after,
  };
}

const seedOf = (bucket: Date, close: number): SeedPoint => ({ time: bucket.toISOString(), close });
