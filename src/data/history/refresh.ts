import {
  sql,
  type CommonQueryMethods,
  type DatabasePool,
  type SqlToken as SqlFragment,
} from 'slonik';
import { z } from 'zod';
import {
  floorTo,
  floorToLevel,
  levelNamed,
  LEVELS,
  type Level,
  type LevelName,
  type RollupMode,
} from './levels.ts';
import { mergeIntervals, type Interval } from './planner.ts';
import { caggWatermark, readMaterialised, rollupMode } from './rollupState.ts';

// Keeps the rollups in step with price_observations.
//
// Apache edition (rollup tables): each step is one transaction under an advisory lock. It takes
// pending invalidations, recomputes exactly the buckets they touched below each level's
// watermark, then materialises complete buckets from the watermark forward, level by level
// (each from the level it is built from, see levels.ts). Re-running a step changes nothing; a second worker
// finding the lock taken skips.
//
// Timescale edition (continuous aggregates): the refresh policies materialise new data, and
// TimescaleDB logs backfills itself; this re-materialises the invalidated ranges at once, so the
// planner may read those ranges from the aggregates again, and then deletes the marks.

const REFRESH_LOCK_KEY = 727_100_030;
const INVALIDATIONS_PER_STEP = 10_000;

export interface RefreshOptions {
  /** Buckets that ended less than this long ago are left to the planner (in-flight writes). */
  settleSeconds?: number;
  /** Most raw time one transaction materialises, so a long catch-up commits as it goes. */
  maxStepSeconds?: number;
  /** Stop stepping after this long; the next run continues from the watermarks. */
  timeBudgetMs?: number;
  /** Continuous aggregates: also run the refresh policies now (tests, benchmarks, doctor). */
  runPolicies?: boolean;
}

export interface RefreshResult {
  mode: RollupMode;
  /** Transactions committed (rollup tables) or levels refreshed (continuous aggregates). */
  steps: number;
  invalidationsConsumed: number;
  /** False when the time budget ran out (or another worker held the lock) before catching up. */
  caughtUp: boolean;
  skipped: boolean;
}

export async function refreshRollups(
  pool: DatabasePool,
  options: RefreshOptions = {},
): Promise<RefreshResult> {
  const mode = await rollupMode(pool);
  return mode === 'continuous' ? refreshContinuous(pool, options) : refreshTables(pool, options);
}

// ---------------------------------------------------------------------------------------------
// Rollup tables

const watermarkRow = z.object({ level: z.string(), watermark: z.date().nullable(), now: z.date() });
const invalidationRow = z.object({ code: z.string(), start: z.date(), end: z.date() });
const instantRow = z.object({ t: z.date().nullable() });

async function refreshTables(pool: DatabasePool, options: RefreshOptions): Promise<RefreshResult> {
  const settleMs = (options.settleSeconds ?? 120) * 1000;
  const maxStepMs = (options.maxStepSeconds ?? 86_400) * 1000;
  const deadline = Date.now() + (options.timeBudgetMs ?? 50_000);
  const result: RefreshResult = {
    mode: 'tables',
    steps: 0,
    invalidationsConsumed: 0,
    caughtUp: false,
    skipped: false,
  };
  for (;;) {
    const step = await pool.transaction((tx) => refreshStep(tx, settleMs, maxStepMs));
    if (step === 'locked') {
      result.skipped = result.steps === 0;
      return result;
    }
    result.steps += 1;
    result.invalidationsConsumed += step.invalidations;
    if (step.caughtUp) {
      result.caughtUp = true;
      return result;
    }
    if (Date.now() >= deadline) return result;
  }
}

async function refreshStep(
  tx: CommonQueryMethods,
  settleMs: number,
  maxStepMs: number,
): Promise<'locked' | { invalidations: number; caughtUp: boolean }> {
  const locked = await tx.oneFirst(
    sql.type(
      z.object({ ok: z.boolean() }),
    )`SELECT pg_try_advisory_xact_lock(${REFRESH_LOCK_KEY}) AS ok`,
  );
  if (!locked) return 'locked';
  // A background job: a step over a day of 50 currencies' minutes may outlast the pool's
  // interactive timeout on a busy machine.
  await tx.query(sql.unsafe`SET LOCAL statement_timeout = '10min'`);
  const marks = await tx.any(sql.type(watermarkRow)`
    SELECT level, watermark, now() AS now FROM rollup_watermarks FOR UPDATE
  `);
  const now = marks[0]?.now.getTime() ?? Date.now();
  const old = new Map(marks.map((m) => [m.level, m.watermark?.getTime() ?? null]));
  const invalidations = await tx.any(sql.type(invalidationRow)`
    DELETE FROM price_invalidations
    WHERE id IN (SELECT id FROM price_invalidations ORDER BY id LIMIT ${INVALIDATIONS_PER_STEP})
    RETURNING currency_code AS code, range_start AS start, range_end AS "end"
  `);

  const fresh = new Map<LevelName, number | null>();
  const rewritten = new Set<string>();
  let caughtUp = invalidations.length < INVALIDATIONS_PER_STEP;
  // LEVELS lists every level after the one it is built from.
  for (const level of LEVELS) {
    const below = level.below === null ? null : levelNamed(level.below);
    const previous = old.get(level.name) ?? null;
    if (previous !== null) {
      const ranges = staleRanges(invalidations, level, previous);
      await recomputeRanges(tx, level, below, ranges);
      for (const range of ranges) rewritten.add(range.code);
    }
    const limit =
      below === null
        ? floorToLevel(now - settleMs, level)
        : floorToLevel(fresh.get(below.name) ?? -Infinity, level);
    let start = previous;
    if (start === null && Number.isFinite(limit)) {
      const first = await tx.one(sql.type(instantRow)`
        SELECT min(${sql.identifier([below === null ? 'time' : 'bucket'])}) AS t
        FROM ${sql.identifier([below === null ? 'price_observations' : below.relation])}
      `);
      start = first.t === null ? null : floorToLevel(first.t.getTime(), level);
    }
    let next = previous;
    if (start !== null && start < limit) {
      const end = below === null ? Math.min(limit, start + maxStepMs) : limit;
      await materialise(tx, level, below, { start, end });
      next = end;
      if (end < limit) caughtUp = false;
    } else if (start !== null && previous === null) {
      next = start;
    }
    fresh.set(level.name, next);
    await tx.query(sql.unsafe`
      UPDATE rollup_watermarks
      SET watermark = ${next === null ? null : new Date(next).toISOString()}::timestamptz,
          refreshed_at = now()
      WHERE level = ${level.name}
    `);
  }
  await bumpRevisions(tx, [...rewritten]);
  return { invalidations: invalidations.length, caughtUp };
}

/**
 * Moves the revision of currencies whose materialised rows were rewritten (see
 * sql/0090_rollup_revisions.sql), so no run kept under the old one is served again. Runs in the
 * transaction that
 * consumed their marks.
 */
async function bumpRevisions(tx: CommonQueryMethods, codes: readonly string[]) {
  if (codes.length === 0) return;
  await tx.query(sql.unsafe`
    INSERT INTO rollup_revisions (currency_code)
    SELECT unnest(${sql.array(codes, 'text')})
    ON CONFLICT (currency_code) DO UPDATE
      SET revision = rollup_revisions.revision + 1, changed_at = now()
  `);
}

interface CodeRange extends Interval {
  code: string;
}

/** The level's buckets touched by the invalidations, below its watermark, merged per currency. */
function staleRanges(
  invalidations: readonly z.infer<typeof invalidationRow>[],
  level: Level,
  watermark: number,
): CodeRange[] {
  const byCode = new Map<string, Interval[]>();
  for (const mark of invalidations) {
    const start = floorToLevel(mark.start.getTime(), level);
    const end = Math.min(floorToLevel(mark.end.getTime(), level) + level.seconds * 1000, watermark);
    if (start >= end) continue;
    const list = byCode.get(mark.code) ?? [];
    list.push({ start, end });
    byCode.set(mark.code, list);
  }
  return [...byCode].flatMap(([code, list]) =>
    mergeIntervals(list).map((range) => ({ code, ...range })),
  );
}

/** The aggregate that builds one level's buckets from the level below (or raw rows). */
function aggregateFrom(
  level: Level,
  below: Level | null,
): { from: SqlFragment; select: SqlFragment; time: SqlFragment } {
  const width = sql.fragment`make_interval(secs => ${level.seconds}::float8)`;
  const phase = sql.fragment`make_interval(secs => ${level.phaseSeconds}::float8)`;
  if (below === null) {
    return {
      from: sql.fragment`price_observations`,
      time: sql.fragment`time`,
      select: sql.fragment`
        currency_code, time_bucket(${width}, time) AS bucket,
        first(open, time) AS open, max(high) AS high, min(low) AS low, last(close, time) AS close,
        sum(volume) AS volume, count(*) AS count, min(time) AS first_time, max(time) AS last_time`,
    };
  }
  return {
    from: sql.identifier([below.relation]),
    time: sql.fragment`bucket`,
    select: sql.fragment`
      currency_code, time_bucket(${width}, bucket, "offset" => ${phase}) AS bucket,
      first(open, first_time) AS open, max(high) AS high, min(low) AS low,
      last(close, last_time) AS close, sum(volume) AS volume, sum(count)::bigint AS count,
      min(first_time) AS first_time, max(last_time) AS last_time`,
  };
}

const COLUMNS = sql.fragment`(currency_code, bucket, open, high, low, close, volume, count, first_time, last_time)`;

async function materialise(
  tx: CommonQueryMethods,
  level: Level,
  below: Level | null,
  range: Interval,
) {
  const target = sql.identifier([level.relation]);
  const source = aggregateFrom(level, below);
  const start = new Date(range.start).toISOString();
  const end = new Date(range.end).toISOString();
  await tx.query(sql.unsafe`
    DELETE FROM ${target} WHERE bucket >= ${start}::timestamptz AND bucket < ${end}::timestamptz
  `);
  await tx.query(sql.unsafe`
    INSERT INTO ${target} ${COLUMNS}
    SELECT ${source.select}
    FROM ${source.from}
    WHERE ${source.time} >= ${start}::timestamptz AND ${source.time} < ${end}::timestamptz
    GROUP BY 1, 2
  `);
}

async function recomputeRanges(
  tx: CommonQueryMethods,
  level: Level,
  below: Level | null,
  ranges: CodeRange[],
) {
  if (ranges.length === 0) return;
  const target = sql.identifier([level.relation]);
  const source = aggregateFrom(level, below);
  const json = sql.jsonb(
    ranges.map((r) => ({
      code: r.code,
      start: new Date(r.start).toISOString(),
      end: new Date(r.end).toISOString(),
    })),
  );
  const recordset = sql.fragment`jsonb_to_recordset(${json}) AS r(code text, start timestamptz, "end" timestamptz)`;
  await tx.query(sql.unsafe`
    DELETE FROM ${target} t USING ${recordset}
    WHERE t.currency_code = r.code AND t.bucket >= r.start AND t.bucket < r."end"
  `);
  await tx.query(sql.unsafe`
    INSERT INTO ${target} ${COLUMNS}
    SELECT agg.* FROM ${recordset}
    CROSS JOIN LATERAL (
      SELECT ${source.select}
      FROM ${source.from}
      WHERE currency_code = r.code AND ${source.time} >= r.start AND ${source.time} < r."end"
      GROUP BY 1, 2
    ) AS agg
  `);
}

// ---------------------------------------------------------------------------------------------
// Continuous aggregates

const idRangeRow = z.object({ id: z.number(), start: z.date(), end: z.date() });
const caggRow = z.object({ watermark: z.date().nullable(), jobId: z.number().nullable() });

async function refreshContinuous(
  pool: DatabasePool,
  options: RefreshOptions,
): Promise<RefreshResult> {
  const marks = await pool.any(sql.type(idRangeRow)`
    SELECT id, range_start AS start, range_end AS "end" FROM price_invalidations
    ORDER BY id LIMIT ${INVALIDATIONS_PER_STEP}
  `);
  let steps = 0;
  for (const level of LEVELS) {
    const cagg = await pool.one(sql.type(caggRow)`
      SELECT ${caggWatermark(sql.fragment`c.mat_hypertable_id`)} AS watermark,
             (SELECT job_id FROM timescaledb_information.jobs j
              WHERE j.proc_name = 'policy_refresh_continuous_aggregate'
                AND (j.config ->> 'mat_hypertable_id')::int = c.mat_hypertable_id) AS "jobId"
      FROM _timescaledb_catalog.continuous_agg c
      WHERE c.user_view_name = ${level.relation}
    `);
    if (marks.length > 0 && cagg.watermark) {
      // Only what is already materialised needs redoing: newer buckets are served in real time.
      const start = floorToLevel(Math.min(...marks.map((m) => m.start.getTime())), level);
      const end = Math.min(
        floorToLevel(Math.max(...marks.map((m) => m.end.getTime())), level) + level.seconds * 1000,
        cagg.watermark.getTime(),
      );
      if (start < end) {
        // TimescaleDB (2.23) rounds a refresh window to the width from the epoch, ignoring a
        // bucket offset: [05:15, 06:15) of the :15 hours is "too small", while [05:00, 06:15)
        // recomputes the 05:15 bucket. Starting at the epoch-aligned floor covers every bucket.
        const from = floorTo(start, level.seconds * 1000);
        await pool.query(sql.unsafe`
          CALL refresh_continuous_aggregate(${level.relation}::regclass,
            ${new Date(from).toISOString()}::timestamptz, ${new Date(end).toISOString()}::timestamptz)
        `);
        steps += 1;
      }
    }
    if (options.runPolicies && cagg.jobId !== null) {
      await pool.query(sql.unsafe`CALL run_job(${cagg.jobId}::int)`);
      steps += 1;
    }
  }
  if (marks.length > 0) {
    // The marks go and the revisions move in one transaction: a reader that finds a range no
    // longer stale also finds the new revision. TimescaleDB may have re-materialised a marked
    // range on its own before, so every currency whose marks reach below a materialisation
    // watermark moves; marks wholly past all of them (new data at the head) touched only rows
    // computed in real time, which are never kept, and move nothing.
    await pool.transaction(async (tx) => {
      const gone = await tx.any(sql.type(z.object({ code: z.string(), start: z.date() }))`
        DELETE FROM price_invalidations WHERE id = ANY(${sql.array(
          marks.map((m) => m.id),
          'int8',
        )})
        RETURNING currency_code AS code, range_start AS start
      `);
      const horizon = Math.max(...Object.values(await readMaterialised(tx, 'continuous')));
      const rewritten = gone.filter((mark) => mark.start.getTime() < horizon);
      await bumpRevisions(tx, [...new Set(rewritten.map((mark) => mark.code))]);
    });
  }
  return {
    mode: 'continuous',
    steps,
    invalidationsConsumed: marks.length,
    caughtUp: marks.length < INVALIDATIONS_PER_STEP,
    skipped: false,
  };
}
