import {
  sql,
  type CommonQueryMethods,
  type DatabasePool,
  type SqlToken as SqlFragment,
} from 'slonik';
import { z } from 'zod';
import { LEVEL_RELATIONS, LEVELS, type LevelName, type RollupMode } from './levels.ts';
import type { RollupFreshness } from './planner.ts';

/**
 * A continuous aggregate's watermark as an instant; NULL while nothing is materialised (the
 * function then returns the lowest representable time, which JavaScript cannot parse).
 */
export function caggWatermark(matHypertableId: SqlFragment): SqlFragment {
  return sql.fragment`(
    SELECT CASE WHEN w < TIMESTAMPTZ '1900-01-01' THEN NULL ELSE w END
    FROM (SELECT _timescaledb_functions.to_timestamp(
                   _timescaledb_functions.cagg_watermark(${matHypertableId})) AS w) AS cagg
  )`;
}

const FINEST = LEVELS[0];
const modeRow = z.object({ continuous: z.boolean(), tables: z.boolean() });

const modes = new WeakMap<object, Promise<RollupMode>>();

/**
 * Which rollup implementation this database has: the migration created continuous aggregates
 * under Timescale's licence and plain hypertables under the Apache one. Read once per pool: it
 * only changes with a migration.
 */
export function rollupMode(pool: DatabasePool): Promise<RollupMode> {
  let found = modes.get(pool);
  if (!found) {
    found = detectRollupMode(pool);
    found.catch(() => modes.delete(pool));
    modes.set(pool, found);
  }
  return found;
}

export async function detectRollupMode(db: CommonQueryMethods): Promise<RollupMode> {
  const row = await db.one(sql.type(modeRow)`
    SELECT EXISTS (
             SELECT 1 FROM timescaledb_information.continuous_aggregates
             WHERE view_name = ${FINEST.relation} AND view_schema = current_schema()
           ) AS continuous,
           to_regclass(${FINEST.relation}) IS NOT NULL AS tables
  `);
  if (row.continuous) return 'continuous';
  if (row.tables) return 'tables';
  throw new Error('the rollup relations are missing: run `platform migrate`');
}

const freshnessRow = z.object({
  kind: z.enum(['watermark', 'materialised', 'stale', 'currency', 'revision']),
  level: z.string().nullable(),
  start: z.date().nullable(),
  end: z.date().nullable(),
});

export interface Freshness extends RollupFreshness {
  currencyKnown: boolean;
  /**
   * Per level: buckets starting before this are materialised rows that change only with the
   * currency's revision. Equal to the watermarks for rollup tables; for continuous aggregates
   * the materialisation watermark, newer buckets being computed in real time.
   */
  materialised: Partial<Record<LevelName, number>>;
  /** The currency's rollup revision (sql/0090_rollup_revisions.sql); 0 before any rewrite. */
  revision: number;
}

/**
 * Watermarks, the pending invalidations of one currency that overlap the window, and its rollup
 * revision. Continuous aggregates answer completely up to now through real-time aggregation, so
 * there every level is complete except where a backfill has not been re-materialised yet; their
 * materialisation watermarks only tell which rows are settled.
 */
export async function readFreshness(
  pool: DatabasePool,
  mode: RollupMode,
  code: string,
  from: Date,
  to: Date,
): Promise<Freshness> {
  const rows = await pool.any(sql.type(freshnessRow)`
    SELECT 'watermark' AS kind, level, watermark AS start, NULL::timestamptz AS "end"
    FROM rollup_watermarks
    ${mode === 'continuous' ? sql.fragment`UNION ALL ${materialisedRows(mode)}` : sql.fragment``}
    UNION ALL
    SELECT 'currency', code, NULL, NULL FROM currencies WHERE code = ${code}
    UNION ALL
    SELECT 'revision', revision::text, NULL, NULL FROM rollup_revisions WHERE currency_code = ${code}
    UNION ALL
    SELECT 'stale', NULL, range_start, range_end
    FROM price_invalidations
    WHERE currency_code = ${code}
      AND range_end >= ${from.toISOString()}::timestamptz
      AND range_start < ${to.toISOString()}::timestamptz
  `);
  const watermarks: RollupFreshness['watermarks'] = {};
  if (mode === 'continuous') for (const level of LEVELS) watermarks[level.name] = Infinity;
  const materialised: Freshness['materialised'] = {};
  const stale: RollupFreshness['stale'] = [];
  let currencyKnown = false;
  let revision = 0;
  for (const row of rows) {
    if (row.kind === 'currency') currencyKnown = true;
    else if (row.kind === 'revision') revision = Number(row.level);
    else if (row.kind === 'stale')
      stale.push({ start: row.start!.getTime(), end: row.end!.getTime() });
    else if (row.kind === 'materialised' && row.start) {
      materialised[row.level as LevelName] = row.start.getTime();
    } else if (row.kind === 'watermark' && mode === 'tables' && row.start) {
      watermarks[row.level as LevelName] = row.start.getTime();
    }
  }
  if (mode === 'tables') Object.assign(materialised, watermarks);
  return { watermarks, materialised, stale, currencyKnown, revision };
}

/**
 * Rows (kind, level, start, end) giving each level's materialisation watermark: the rollup
 * tables' watermarks, or the continuous aggregates' own.
 */
function materialisedRows(mode: RollupMode) {
  return mode === 'continuous'
    ? sql.fragment`
        SELECT 'materialised' AS kind, replace(c.user_view_name, 'candles_', '') AS level,
               ${caggWatermark(sql.fragment`c.mat_hypertable_id`)} AS start, NULL::timestamptz AS "end"
        FROM _timescaledb_catalog.continuous_agg c
        WHERE c.user_view_name = ANY(${sql.array(LEVEL_RELATIONS, 'text')})`
    : sql.fragment`
        SELECT 'materialised' AS kind, level, watermark AS start, NULL::timestamptz AS "end"
        FROM rollup_watermarks`;
}

/** Per level: buckets starting before this are materialised rows (see Freshness). */
export async function readMaterialised(
  pool: CommonQueryMethods,
  mode: RollupMode,
): Promise<Freshness['materialised']> {
  const rows = await pool.any(sql.type(freshnessRow)`${materialisedRows(mode)}`);
  const materialised: Freshness['materialised'] = {};
  for (const row of rows) if (row.start) materialised[row.level as LevelName] = row.start.getTime();
  return materialised;
}

export interface LevelStatus {
  level: LevelName;
  /** Everything before this instant is materialised (null: nothing yet). */
  watermark: string | null;
  lagSeconds: number | null;
}

export interface RollupStatus {
  mode: RollupMode;
  levels: LevelStatus[];
  pendingInvalidations: number;
  oldestInvalidationSeconds: number | null;
  /** Whether any price has been stored at all (a fresh install has nothing to roll up). */
  hasData: boolean;
}

const statusRow = z.object({
  level: z.string(),
  watermark: z.date().nullable(),
  lagSeconds: z.number().nullable(),
});
const pendingRow = z.object({
  pending: z.number(),
  oldestSeconds: z.number().nullable(),
  hasData: z.boolean(),
});

/** Mode, watermark and lag of every level, for `platform doctor` and the readiness report. */
export async function readRollupStatus(pool: DatabasePool): Promise<RollupStatus> {
  const mode = await rollupMode(pool);
  const levels =
    mode === 'continuous'
      ? await pool.any(sql.type(statusRow)`
          SELECT replace(c.user_view_name, 'candles_', '') AS level, w.watermark,
                 extract(epoch FROM now() - w.watermark)::float8 AS "lagSeconds"
          FROM _timescaledb_catalog.continuous_agg c
          CROSS JOIN LATERAL (SELECT ${caggWatermark(sql.fragment`c.mat_hypertable_id`)} AS watermark) w
          WHERE c.user_view_name = ANY(${sql.array(LEVEL_RELATIONS, 'text')})
        `)
      : await pool.any(sql.type(statusRow)`
          SELECT level, watermark, extract(epoch FROM now() - watermark)::float8 AS "lagSeconds"
          FROM rollup_watermarks
        `);
  const pending = await pool.one(sql.type(pendingRow)`
    SELECT count(*)::int AS pending,
           extract(epoch FROM now() - min(created_at))::float8 AS "oldestSeconds",
           EXISTS (SELECT 1 FROM price_observations) AS "hasData"
    FROM price_invalidations
  `);
  const byName = new Map(levels.map((row) => [row.level, row]));
  return {
    mode,
    levels: LEVELS.map((level) => {
      const row = byName.get(level.name);
      return {
        level: level.name,
        watermark: row?.watermark?.toISOString() ?? null,
        lagSeconds: row?.lagSeconds === null || !row ? null : Math.round(row.lagSeconds),
      };
    }),
    pendingInvalidations: pending.pending,
    oldestInvalidationSeconds:
      pending.oldestSeconds === null ? null : Math.round(pending.oldestSeconds),
    hasData: pending.hasData,
  };
}
