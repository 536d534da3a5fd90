import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { utcOriginMs } from '../../shared/time/bucketGrid.ts';
import { FORMAT_VERSION, type ItemShape } from './jsonText.ts';
import { levelNamed, mod } from './levels.ts';
import type { Segment } from './planner.ts';
import type { CandleRequest } from './request.ts';
import { RUN_BUCKETS, type Run } from './runs.ts';

// Whole runs of hourly history kept formatted in the database (sql/0091_history_run_texts.sql).
// The in-process cache (runCache.ts) serves repeated answers; these serve the first one: the
// worker renders every whole run of the 1h level below its materialisation watermark, so a
// year at one hour reads 17 texts instead of formatting 8,760 buckets. They are read only at
// the currency's current revision, so a recomputed backfill never shows through an old text, and
// only at this code's FORMAT_VERSION, so a deploy never splices texts of an older format in.

/** The level whose whole runs are rendered: hourly buckets, what a year-long chart asks for. */
export const RENDERED_LEVEL = levelNamed('1h');
/** Width of one rendered run, in milliseconds. */
export const RENDERED_RUN_MS = RUN_BUCKETS * RENDERED_LEVEL.seconds * 1000;

/**
 * Whether a run is one the worker renders: a whole run of hourly buckets on the epoch's grid,
 * without fill, read from the 1h level's materialised rows alone (`sources`: the plan within it).
 */
export function isRenderedRun(
  request: CandleRequest,
  sources: readonly Segment[],
  run: Run,
): boolean {
  return (
    run.settled &&
    request.fill === 'none' &&
    request.intervalSeconds === RENDERED_LEVEL.seconds &&
    utcOriginMs(request) === 0 &&
    mod(run.start, RENDERED_RUN_MS) === 0 &&
    run.end - run.start === RENDERED_RUN_MS &&
    sources.length === 1 &&
    sources[0]!.source === RENDERED_LEVEL.name
  );
}

const textRow = z.object({ start: z.date(), empty: z.boolean(), items: z.string() });

/**
 * The rendered texts of these runs at this revision and this code's format version, by run start;
 * runs not rendered are absent.
 */
export async function readRunTexts(
  pool: DatabasePool,
  code: string,
  shape: ItemShape,
  revision: number,
  runs: readonly Run[],
): Promise<Map<number, { empty: boolean; items: string }>> {
  if (runs.length === 0) return new Map();
  const starts = runs.map((run) => new Date(run.start).toISOString());
  const rows = await pool.any(sql.type(textRow)`
    SELECT run_start AS start, empty, items FROM history_run_texts
    WHERE currency_code = ${code} AND shape = ${shape}
      AND interval_seconds = ${RENDERED_LEVEL.seconds} AND revision = ${revision}
      AND format_version = ${FORMAT_VERSION}
      AND run_start = ANY(${sql.array(starts, 'timestamptz')})
      AND run_end = run_start + make_interval(secs => ${RENDERED_RUN_MS / 1000}::float8)
  `);
  return new Map(rows.map((row) => [row.start.getTime(), row]));
}

/** Forgets the texts of currencies whose revision moves (in that same transaction). */
export async function dropRunTexts(tx: CommonQueryMethods, codes: readonly string[]) {
  if (codes.length === 0) return;
  await tx.query(sql.unsafe`
    DELETE FROM history_run_texts WHERE currency_code = ANY(${sql.array(codes, 'text')})
  `);
}
