import type { DatabasePool } from 'slonik';
import { NotFoundError } from '../../shared/errors.ts';
import { localGrid } from '../../shared/time/bucketGrid.ts';
import { readFillSeeds, type FillSeeds } from './fillSeeds.ts';
import { LEVELS } from './levels.ts';
import {
  mergeIntervals,
  planSegments,
  usableLevels,
  type Interval,
  type RollupFreshness,
  type Segment,
} from './planner.ts';
import type { CandleRequest } from './request.ts';
import { readFreshness, rollupMode, type Freshness } from './rollupState.ts';
import type { SettledSegment } from './runs.ts';

// A request's plan: the rollups' state read from the database, turned into the segments that
// answer the window (planner.ts) and the values a fill carries in (fillSeeds.ts).

// Beyond this many pending invalidations the planner treats their hull as one stale range:
// coarser, still exact, and the statement stays small.
const MAX_STALE_RANGES = 32;

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
  const levels = usableLevels(localGrid(request, request));
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

/**
 * The plan's segments cut where their rows stop being settled: rows that change only with the
 * currency's revision. Rollup rows are settled below their level's materialisation watermark
 * (continuous aggregates compute newer buckets in real time). Raw rows are settled below the
 * finest level's watermark and outside pending backfills: older writes must be marked, which is
 * what the rollups themselves rely on, and consuming the marks moves the revision.
 */
export function settledSegments(segments: Segment[], freshness: Freshness): SettledSegment[] {
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
