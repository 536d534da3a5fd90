import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { revisionOf, runsJsonQuery } from './answerSql.ts';
import { FORMAT_VERSION, ITEM_SHAPES, type ItemShape } from './jsonText.ts';
import { floorTo } from './levels.ts';
import { readMaterialised, rollupMode } from './rollupState.ts';
import type { CandleRequest } from './request.ts';
import { RENDERED_LEVEL, RENDERED_RUN_MS } from './runTexts.ts';

// The worker's side of runTexts.ts: after each rollup refresh, renders the whole hourly runs
// below the 1h level's materialisation watermark that have no text at their currency's current
// revision and this code's format version yet, with the very statement the data module computes
// them with. Texts of an older format version are deleted; a newer one (a process of the next
// release, during a rolling deploy) is left to that release.

const NO_SEEDS = { before: null, after: null };

export interface RenderResult {
  /** Texts written (a run of a currency in one shape each). */
  rendered: number;
  /** False when the time budget ran out first; the next run continues. */
  caughtUp: boolean;
}

const missingRow = z.object({
  code: z.string(),
  shape: z.enum(['open', 'candle']),
  start: z.date(),
});

export async function renderRunTexts(
  pool: DatabasePool,
  options: { timeBudgetMs?: number } = {},
): Promise<RenderResult> {
  const deadline = Date.now() + (options.timeBudgetMs ?? 30_000);
  const result: RenderResult = { rendered: 0, caughtUp: true };
  await pool.query(
    sql.unsafe`DELETE FROM history_run_texts WHERE format_version < ${FORMAT_VERSION}`,
  );
  const batches = new Map<string, { code: string; shape: ItemShape; starts: number[] }>();
  for (const row of await findMissingRuns(pool)) {
    const id = `${row.code}|${row.shape}`;
    const batch = batches.get(id) ?? { code: row.code, shape: row.shape, starts: [] };
    batch.starts.push(row.start.getTime());
    batches.set(id, batch);
  }
  for (const batch of batches.values()) {
    if (Date.now() >= deadline) return { ...result, caughtUp: false };
    result.rendered += await render(pool, batch.code, batch.shape, batch.starts);
  }
  return result;
}

/** How many texts are rendered at their currency's revision, and how many whole runs lack one. */
export async function readRenderStatus(pool: DatabasePool) {
  const [missing, rendered] = await Promise.all([
    findMissingRuns(pool),
    pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM history_run_texts t
      WHERE t.revision = ${revisionOf(sql.fragment`t.currency_code`)}
        AND t.format_version = ${FORMAT_VERSION}
    `),
  ]);
  return { rendered, missing: missing.length };
}

/**
 * Every whole run, of every currency and shape, below the 1h level's materialisation watermark
 * that has no text at its currency's revision, in one statement: the job runs every minute and
 * usually finds nothing.
 */
async function findMissingRuns(pool: DatabasePool) {
  const horizon = (await readMaterialised(pool, await rollupMode(pool)))[RENDERED_LEVEL.name];
  if (horizon === undefined) return [];
  const runSeconds = RENDERED_RUN_MS / 1000;
  return pool.any(sql.type(missingRow)`
    SELECT c.code, shape.name AS shape, run AS start
    FROM currencies c
    CROSS JOIN LATERAL (
      SELECT min(bucket) AS first FROM ${sql.identifier([RENDERED_LEVEL.relation])} l
      WHERE l.currency_code = c.code
    ) AS level
    CROSS JOIN unnest(${sql.array(ITEM_SHAPES, 'text')}) AS shape(name)
    CROSS JOIN LATERAL generate_series(
      to_timestamp(floor(extract(epoch FROM level.first) / ${runSeconds}) * ${runSeconds}),
      ${iso(floorTo(horizon, RENDERED_RUN_MS) - RENDERED_RUN_MS)}::timestamptz,
      make_interval(secs => ${runSeconds}::float8)) AS run
    WHERE NOT EXISTS (
      SELECT 1 FROM history_run_texts t
      WHERE t.currency_code = c.code AND t.shape = shape.name
        AND t.interval_seconds = ${RENDERED_LEVEL.seconds} AND t.run_start = run
        AND t.run_end = run + make_interval(secs => ${runSeconds}::float8)
        AND t.revision = ${revisionOf(sql.fragment`c.code`)}
        AND t.format_version = ${FORMAT_VERSION}
    )
    ORDER BY c.code, shape.name, run
  `);
}

/** Renders these whole runs of one currency in one shape, in one statement. */
async function render(
  pool: DatabasePool,
  code: string,
  shape: ItemShape,
  starts: readonly number[],
): Promise<number> {
  const runs = starts.map((start) => ({ start, end: start + RENDERED_RUN_MS, settled: true }));
  const request: CandleRequest = {
    code,
    from: new Date(runs[0]!.start),
    to: new Date(runs.at(-1)!.end),
    intervalSeconds: RENDERED_LEVEL.seconds,
    fill: 'none',
  };
  const segments = runs.map((run) => ({ source: RENDERED_LEVEL.name, ...run }));
  // One statement reads the rows, the revision and the pending backfills, so it sees them as
  // of one moment: a run a backfill has touched and not yet been recomputed is left for later.
  const written = await pool.query(sql.unsafe`
    INSERT INTO history_run_texts
      (currency_code, shape, interval_seconds, format_version, run_start, run_end, revision,
       empty, items)
    SELECT ${code}, ${shape}, ${RENDERED_LEVEL.seconds}, ${FORMAT_VERSION}, text.lo, text.hi,
           ${revisionOf(code)}, text.empty, text.items
    FROM (${runsJsonQuery(request, segments, NO_SEEDS, shape, runs)}) AS text
    WHERE NOT EXISTS (
      SELECT 1 FROM price_invalidations i
      WHERE i.currency_code = ${code} AND i.range_end >= text.lo AND i.range_start < text.hi
    )
    ON CONFLICT (currency_code, shape, interval_seconds, format_version, run_start) DO UPDATE
      SET run_end = EXCLUDED.run_end, revision = EXCLUDED.revision, empty = EXCLUDED.empty,
          items = EXCLUDED.items, rendered_at = now()
  `);
  return written.rowCount;
}

const iso = (ms: number) => new Date(ms).toISOString();
