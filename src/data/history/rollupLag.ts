import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { ScrapeSample } from '../../shared/metrics.ts';
import { floorToLevel, LEVEL_RELATIONS, LEVELS } from './levels.ts';
import { caggWatermark, rollupMode } from './rollupState.ts';

// rollup_lag_seconds: per level, how long the oldest raw data the level should already reflect
// has been waiting, 0 when the level is up to date. Two kinds of wait:
// - the oldest raw price at or past the level's watermark: its bucket is complete once the
//   bucket's end has passed and the writes into it have settled, then due at the next refresh
//   (rollup tables: the worker's refresh_rollups, every minute after ROLLUP_SETTLE_SECONDS;
//   continuous aggregates: the refresh policy, after its end_offset and schedule interval, both
//   read from TimescaleDB);
// - a backfilled range below the watermark, marked in price_invalidations, from when it was marked.
// Read from the database at scrape time, so it is true while every worker idles or is stuck.

/** How often the worker's crontab runs refresh_rollups (workers/index.ts). */
const REFRESH_CADENCE_SECONDS = 60;

const levelRow = z.object({
  level: z.string(),
  watermark: z.date().nullable(),
  /** Seconds past a bucket's end before a refresh is expected to have materialised it. */
  allowance: z.number().nullable(),
  oldestMark: z.date().nullable(),
  /** The oldest raw price at or past the watermark (any, when nothing is materialised yet). */
  nextRaw: z.date().nullable(),
  now: z.date(),
});

/** Per level row `w` (with a `watermark`): marks below the watermark and raw data past it. */
const WAITING = sql.fragment`
  (SELECT min(created_at) FROM price_invalidations i
   WHERE i.range_start < w.watermark) AS "oldestMark",
  (SELECT min(time) FROM price_observations p
   WHERE p.time >= coalesce(w.watermark, '-infinity'::timestamptz)) AS "nextRaw",
  now() AS now`;

export async function readRollupLag(
  pool: DatabasePool,
  settleSeconds: number,
): Promise<ScrapeSample[]> {
  const mode = await rollupMode(pool);
  const tablesAllowance = settleSeconds + REFRESH_CADENCE_SECONDS;
  const rows =
    mode === 'continuous'
      ? await pool.any(sql.type(levelRow)`
          SELECT replace(c.user_view_name, 'candles_', '') AS level, w.watermark,
                 extract(epoch FROM (j.config ->> 'end_offset')::interval + j.schedule_interval)::float8
                   AS allowance,
                 ${WAITING}
          FROM _timescaledb_catalog.continuous_agg c
          CROSS JOIN LATERAL (SELECT ${caggWatermark(sql.fragment`c.mat_hypertable_id`)} AS watermark) w
          LEFT JOIN timescaledb_information.jobs j
            ON j.proc_name = 'policy_refresh_continuous_aggregate'
           AND (j.config ->> 'mat_hypertable_id')::int = c.mat_hypertable_id
          WHERE c.user_view_name = ANY(${sql.array(LEVEL_RELATIONS, 'text')})
        `)
      : await pool.any(sql.type(levelRow)`
          SELECT level, watermark, ${tablesAllowance}::float8 AS allowance, ${WAITING}
          FROM rollup_watermarks w
        `);
  return LEVELS.flatMap((level) => {
    const row = rows.find((r) => r.level === level.name);
    if (!row) return [];
    const width = level.seconds * 1000;
    const now = row.now.getTime();
    const allowance = (row.allowance ?? tablesAllowance) * 1000;
    const bucket = row.nextRaw ? floorToLevel(row.nextRaw.getTime(), level) : null;
    const waits = [
      bucket === null ? 0 : now - (bucket + width + allowance),
      row.oldestMark ? now - row.oldestMark.getTime() : 0,
    ];
    return [{ labels: { level: level.name }, value: Math.max(0, ...waits) / 1000 }];
  });
}
