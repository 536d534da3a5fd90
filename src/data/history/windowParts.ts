import type { CandleRequest } from './candleQuery.ts';
import type { Segment } from './planner.ts';

// Long answers are computed in consecutive parts on separate connections at once: formatting
// thousands of buckets is CPU work inside PostgreSQL, and one statement only ever uses one core.
// Pure functions over the plan, so the cutting rules are unit-tested without a database.

/** Below this many buckets one statement is quicker than the extra round trips. */
export const MIN_BUCKETS_TO_SPLIT = 3000;
/** Parts per answer: more than the database's cores only queue behind each other. */
export const PARTS = 2;
/**
 * Buckets per run: the body comes from PostgreSQL as one text per run (25–65 kB). Runs of a
 * megabyte would become strings the garbage collector only frees in a full mark-compact, and
 * those pauses made the slowest answers twice as slow.
 */
export const RUN_BUCKETS = 500;

export interface WindowPart {
  request: CandleRequest;
  segments: Segment[];
}

/**
 * Cuts the window at bucket boundaries into up to PARTS windows of about as many buckets each,
 * with the plan's segments clipped to them. Only windows on a fixed UTC grid are cut: a zone's
 * buckets vary in length, and the previous/linear fills carry values across the cut.
 */
export function splitWindow(request: CandleRequest, segments: Segment[]): WindowPart[] {
  const whole = [{ request, segments }];
  if (!isCuttable(request)) return whole;
  const from = request.from.getTime();
  const to = request.to.getTime();
  const width = request.intervalSeconds * 1000;
  if ((to - from) / width < MIN_BUCKETS_TO_SPLIT) return whole;
  const origin = gridOrigin(request);
  const cuts = [from];
  for (let i = 1; i < PARTS; i++) {
    const target = from + ((to - from) * i) / PARTS;
    const cut = origin + Math.floor((target - origin) / width) * width;
    if (cut > cuts.at(-1)! && cut < to) cuts.push(cut);
  }
  cuts.push(to);
  return cuts.slice(1).map((end, i) => ({
    request: { ...request, from: new Date(cuts[i]!), to: new Date(end) },
    segments: clip(segments, cuts[i]!, end),
  }));
}

/**
 * Whether pieces of the window can be answered apart: buckets on a fixed UTC grid, and no fill
 * that carries values from one bucket to the next.
 */
export function isCuttable(request: CandleRequest): boolean {
  return !request.timeZone && request.fill !== 'previous' && request.fill !== 'linear';
}

/**
 * Cuts a cuttable window into runs of at most RUN_BUCKETS buckets, as [start, end) pairs in
 * milliseconds: the window's start, then every RUN_BUCKETS-th bucket boundary, then its end.
 */
export function bucketRuns(request: CandleRequest): Array<[start: number, end: number]> {
  const from = request.from.getTime();
  const to = request.to.getTime();
  const width = request.intervalSeconds * 1000;
  const origin = gridOrigin(request);
  const firstBucket = origin + Math.floor((from - origin) / width) * width;
  const starts = [from];
  for (let start = firstBucket + RUN_BUCKETS * width; start < to; start += RUN_BUCKETS * width) {
    starts.push(start);
  }
  return starts.map((start, i) => [start, starts[i + 1] ?? to]);
}

/** An instant on the request's UTC grid of bucket boundaries. */
function gridOrigin(request: CandleRequest): number {
  return (request.origin?.getTime() ?? 0) + (request.offsetSeconds ?? 0) * 1000;
}

function clip(segments: Segment[], start: number, end: number): Segment[] {
  return segments
    .map((segment) => ({
      ...segment,
      start: Math.max(segment.start, start),
      end: Math.min(segment.end, end),
    }))
    .filter((segment) => segment.start < segment.end);
}

/**
 * The pieces of one JSON array holding the given runs of items (each run the comma-separated
 * texts of its items), in order: `a,b` and `c` make the pieces of `[a,b,c]`. The pieces are
 * written one after the other rather than joined, which would copy the whole body once more (a
 * megabyte for a year of hourly candles).
 */
export function jsonArrayPieces(runs: readonly string[]): string[] {
  const items = runs.filter((run) => run.length > 0);
  return ['[', ...items.flatMap((item, i) => (i === 0 ? [item] : [',', item])), ']'];
}
