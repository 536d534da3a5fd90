import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import {
  answerRows,
  inBucketOrder,
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
// buckets are rarely empty, the second pass is mostly nothing. A run no seed fills depends on its
// own rows alone and is kept between requests like any other settled run (candleQuery.ts); the
// others are made each time.

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
           string_agg(${candleItem(request)}, ',') AS items,
           min(bucket) AS "firstBucket", max(bucket) AS "lastBucket",
           min(bucket) FILTER (WHERE count > 0) AS "firstData",
           first(close, bucket) FILTER (WHERE count > 0) AS "firstClose",
           max(bucket) FILTER (WHERE count > 0) AS "lastData",
           last(close, bucket) FILTER (WHERE count > 0) AS "lastClose"
    FROM (${inBucketOrder(rows)}) AS candle`;
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
export type FilledRun = z.infer<typeof filledRunRow>;

/** A run's JSON text (items joined by commas) and whether none of its buckets holds a value. */
type RunText = { items: string | Buffer; empty: boolean };

/** Where the runs' texts may be kept between requests (candleQuery.ts: the run cache). */
export interface RunStore {
  /** Run i's text kept from an earlier answer, if any. */
  lookUp(i: number): RunText | undefined;
  /** Offers run i's text, made from its own rows alone, for keeping; gives the text to send. */
  keep(i: number, run: FilledRun): RunText;
}

/**
 * The runs' texts, in order. A run that neither starts empty nor (for 'linear') ends empty is
 * made from its own rows alone, whatever lies around it, and may be kept like any other run.
 */
export async function filledRunTexts(
  pool: DatabasePool,
  request: CandleRequest,
  plan: Plan,
  runs: readonly Run[],
  store?: RunStore,
): Promise<RunText[]> {
  const kept = runs.map((_, i) => store?.lookUp(i));
  const made: Array<FilledRun | undefined> = [];
  const make = async (indices: number[], seedsOf: (i: number) => FillSeeds) => {
    const seeds = indices.map(seedsOf);
    const texts = await compute(
      pool,
      request,
      plan.segments,
      indices.map((i) => runs[i]!),
      seeds,
    );
    for (const [j, i] of indices.entries()) made[i] = texts[j];
  };
  const known = (i: number): FillSeeds => ({
    before: i === 0 ? plan.seeds.before : null,
    after: i === runs.length - 1 ? plan.seeds.after : null,
  });
  const indices = runs.map((_, i) => i);
  await make(
    indices.filter((i) => !kept[i]),
    known,
  );
  const again = indices.filter((i) => made[i] && needsNeighbours(request, made[i], i, runs.length));
  // Their seeds come from the nearest runs holding data; a kept run does not say where it holds
  // data, so the kept runs on the way are made too (mostly none, or the one next to it).
  for (;;) {
    const unknown = new Set(again.flatMap((i) => unknownOnTheWay(request, made, runs.length, i)));
    if (unknown.size === 0) break;
    await make([...unknown], known);
  }
  const seeds = new Map(again.map((i) => [i, neighbourSeeds(request, plan, made, runs.length, i)]));
  await make(again, (i) => seeds.get(i)!);
  return indices.map((i) => {
    if (kept[i]) return kept[i];
    const run = made[i]!;
    return store && ownRowsAlone(request, run) ? store.keep(i, run) : run;
  });
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
  const batches = batchRuns(seeded, request);
  const results = await Promise.all(
    batches.map((batch) => pool.any(filledRunsJsonQuery(request, segments, batch))),
  );
  return results.flat();
}

/** Whether a run's first bucket and its last one hold no data (false for a run of no bucket). */
function emptyEnds(run: FilledRun): { leading: boolean; trailing: boolean } {
  if (run.firstBucket === null || run.lastBucket === null)
    return { leading: false, trailing: false };
  return {
    leading: run.firstData === null || run.firstData.getTime() > run.firstBucket.getTime(),
    trailing: run.lastData === null || run.lastData.getTime() < run.lastBucket.getTime(),
  };
}

/** Whether run i starts empty (after the first run) or, for 'linear', ends so (before the last). */
function needsNeighbours(request: CandleRequest, run: FilledRun, i: number, count: number) {
  const { leading, trailing } = emptyEnds(run);
  return (i > 0 && leading) || (request.fill === 'linear' && i < count - 1 && trailing);
}

/** Whether a run's text depends on its own rows alone: no seed fills any of its buckets. */
function ownRowsAlone(request: CandleRequest, run: FilledRun): boolean {
  const { leading, trailing } = emptyEnds(run);
  return !leading && !(request.fill === 'linear' && trailing);
}

/**
 * The nearest run from `from` on in the direction `step` holding data (by `holds`): the run,
 * null when none does, or the index of the first run on the way not made (so not known).
 */
function nearestHolding(
  made: ReadonlyArray<FilledRun | undefined>,
  count: number,
  from: number,
  step: 1 | -1,
  holds: (run: FilledRun) => boolean,
): FilledRun | number | null {
  for (let k = from; k >= 0 && k < count; k += step) {
    const run = made[k];
    if (!run) return k;
    if (holds(run)) return run;
  }
  return null;
}

const holdsLast = (run: FilledRun) => run.lastData !== null;
const holdsFirst = (run: FilledRun) => run.firstData !== null;

/** The runs not made yet on the way from run i to the runs whose data seed it. */
function unknownOnTheWay(
  request: CandleRequest,
  made: ReadonlyArray<FilledRun | undefined>,
  count: number,
  i: number,
): number[] {
  const ways = [nearestHolding(made, count, i - 1, -1, holdsLast)];
  if (request.fill === 'linear') ways.push(nearestHolding(made, count, i + 1, 1, holdsFirst));
  return ways.filter((way): way is number => typeof way === 'number');
}

/**
 * The seeds of run i from the runs around it: the last bucket holding data before it and the
 * first after it, or the window's own seeds where no run holds one.
 */
function neighbourSeeds(
  request: CandleRequest,
  plan: Plan,
  made: ReadonlyArray<FilledRun | undefined>,
  count: number,
  i: number,
): FillSeeds {
  const before = nearestHolding(made, count, i - 1, -1, holdsLast);
  const after =
    request.fill === 'linear' ? nearestHolding(made, count, i + 1, 1, holdsFirst) : null;
  if (typeof before === 'number' || typeof after === 'number')
    throw new Error('a run between a fill and its seed was not made');
  return {
    before: before ? seedOf(before.lastData!, before.lastClose!) : plan.seeds.before,
    after: after ? seedOf(after.firstData!, after.firstClose!) : plan.seeds.after,
  };
}

const seedOf = (bucket: Date, close: number): SeedPoint => ({ time: bucket.toISOString(), close });
