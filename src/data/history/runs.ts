import { isBoundary, utcOriginMs } from '../../shared/time/bucketGrid.ts';
import type { Segment } from './planner.ts';
import type { CandleRequest } from './request.ts';

// A window on a grid fixed in time is answered in runs of buckets, each formatted on its own: settled runs
// are kept between requests (runCache.ts), and the runs still to compute go to the database
// in up to two batches on separate connections at once, since formatting thousands of buckets is
// CPU work inside PostgreSQL and one statement only ever uses one core. Pure functions over the
// plan, so the cutting rules are unit-tested without a database.

/** Below this many buckets one statement is quicker than the extra round trips. */
export const MIN_BUCKETS_TO_SPLIT = 3000;
/** Batches per answer: more than the database's cores only queue behind each other. */
export const BATCHES = 2;
/**
 * Buckets per run: the body comes from PostgreSQL as one text per run (25–65 kB). Runs of a
 * megabyte would become strings the garbage collector only frees in a full mark-compact, and
 * those pauses made the slowest answers twice as slow.
 */
export const RUN_BUCKETS = 500;

/** A run of consecutive buckets of a window on a fixed grid: [start, end) in milliseconds. */
export interface Run {
  start: number;
  end: number;
  /**
   * Whole buckets read only from settled rows (see SettledSegment), so its text may be kept
   * (see runCache.ts).
   */
  settled: boolean;
}

/**
 * A source of the plan, and whether its rows are settled: they change only with the currency's
 * rollup revision (see runCache.ts).
 */
export interface SettledSegment extends Segment {
  settled: boolean;
}

/**
 * Cuts a window on a fixed grid (not a zone's days or weeks) into runs of at most RUN_BUCKETS
 * buckets, end to end. The cuts fall on every RUN_BUCKETS-th boundary of the bucket grid
 * counted from its origin, fixed in time, so that windows of the same grid share their runs
 * whatever their ends; around the partial buckets at the window's ends; and on the bucket
 * boundaries around every point where the plan passes between settled and unsettled sources,
 * so that a run is wholly one or the other.
 */
export function planRuns(request: CandleRequest, segments: readonly SettledSegment[]): Run[] {
  const from = request.from.getTime();
  const to = request.to.getTime();
  const width = request.intervalSeconds * 1000;
  const origin = utcOriginMs(request);
  const onGrid = (ms: number, round: (x: number) => number) =>
    origin + round((ms - origin) / width) * width;
  const cuts = new Set<number>();
  const block = RUN_BUCKETS * width;
  const firstBlock = origin + Math.floor((from - origin) / block) * block;
  for (let cut = firstBlock + block; cut < to; cut += block) cuts.add(cut);
  // Partial buckets at the window's ends are runs of their own (see `settled` below).
  cuts.add(onGrid(from, Math.ceil));
  cuts.add(onGrid(to, Math.floor));
  for (let i = 1; i < segments.length; i++) {
    if (segments[i - 1]!.settled === segments[i]!.settled) continue;
    cuts.add(onGrid(segments[i]!.start, Math.floor));
    cuts.add(onGrid(segments[i]!.start, Math.ceil));
  }
  const bounds = [
    from,
    ...[...cuts].filter((cut) => cut > from && cut < to).sort((a, b) => a - b),
    to,
  ];
  return bounds.slice(1).map((end, i) => {
    const start = bounds[i]!;
    const touching = segments.filter((s) => s.start < end && s.end > start);
    return {
      start,
      end,
      // A partial bucket at either end of the window is its window's alone: never kept.
      settled:
        isBoundary(request, start) &&
        isBoundary(request, end) &&
        touching.length > 0 &&
        touching.every((s) => s.settled),
    };
  });
}

/**
 * Splits runs to compute into up to BATCHES batches of consecutive runs with about as many
 * buckets each, computed on separate connections at once; fewer than MIN_BUCKETS_TO_SPLIT
 * buckets stay one batch.
 */
export function batchRuns<R extends Run>(runs: readonly R[], request: CandleRequest): R[][] {
  if (runs.length === 0) return [];
  const width = request.intervalSeconds * 1000;
  const buckets = (run: Run) => (run.end - run.start) / width;
  const total = runs.reduce((sum, run) => sum + buckets(run), 0);
  if (total < MIN_BUCKETS_TO_SPLIT) return [[...runs]];
  const batches: R[][] = [[]];
  let counted = 0;
  for (const run of runs) {
    const share = (total * batches.length) / BATCHES;
    if (counted >= share && batches.length < BATCHES) batches.push([]);
    batches.at(-1)!.push(run);
    counted += buckets(run);
  }
  return batches.filter((batch) => batch.length > 0);
}

/** The plan's segments clipped to [start, end). */
export function clip(segments: readonly Segment[], start: number, end: number): Segment[] {
  return segments
    .map((segment) => ({
      ...segment,
      start: Math.max(segment.start, start),
      end: Math.min(segment.end, end),
    }))
    .filter((segment) => segment.start < segment.end);
}
