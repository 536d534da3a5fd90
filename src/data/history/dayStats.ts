import { sql, type DatabasePool, type SqlToken as SqlFragment } from 'slonik';
import { z } from 'zod';
import { levelNamed, LEVELS, type LevelName } from './levels.ts';
import { mergeIntervals, planSegments, type RollupFreshness, type Segment } from './planner.ts';
import { rollupMode } from './rollupState.ts';

// The 24-hour statistics of every currency (open, high, low, volume over the last day), read
// from the rollups in one statement for all currencies: hourly rows for the whole hours, 15- and 5-minute
// rows for the edges, raw rows only for the edges finer than 5 minutes and the not-yet-rolled-up tail. The
// planner (planner.ts) decides which level serves which part of the window, exactly as for a
// history answer, so the figures equal a brute-force computation over the raw rows.

export const DAY_MS = 86_400_000;

export interface DayStats {
  /** First price of the window (the price 24 hours ago, or the first one since). */
  open: number;
  high: number;
  low: number;
  volume: number;
}

const statsRow = z.object({
  code: z.string(),
  open: z.number(),
  high: z.number(),
  low: z.number(),
  volume: z.number(),
});

const freshnessRow = z.object({
  kind: z.enum(['watermark', 'stale']),
  level: z.string().nullable(),
  start: z.date().nullable(),
  end: z.date().nullable(),
});

// Beyond this many pending invalidations their hull stands for them (coarser, still exact).
const MAX_STALE_RANGES = 32;

/** Statistics of every currency with a price in [to − 24 h, to), by code. */
export async function readDayStats(pool: DatabasePool, to: Date): Promise<Map<string, DayStats>> {
  const window = { start: to.getTime() - DAY_MS, end: to.getTime() };
  const freshness = await readWindowFreshness(pool, window.start, window.end);
  // Hourly and finer rows on the UTC hour only: a day row would never fit inside a window not
  // aligned to days, and planSegments needs each level to nest in the next (the offset hours
  // do not nest in candles_1h's).
  const segments = planSegments(
    window,
    LEVELS.filter((level) => level.name !== '1d' && level.phaseSeconds === 0),
    freshness,
  );
  const rows = await pool.any(sql.type(statsRow)`
    SELECT currency_code AS code, first(open, first_time) AS open, max(high) AS high,
           min(low) AS low, sum(volume) AS volume
    FROM (${sql.join(segments.map(segmentRows), sql.fragment` UNION ALL `)}) AS parts
    GROUP BY currency_code
  `);
  return new Map(rows.map(({ code, ...stats }) => [code, stats]));
}

/**
 * Which rollup rows may be read for the window, for every currency at once: the watermarks
 * (continuous aggregates are complete through real-time aggregation) and the pending
 * invalidations of any currency, so a range one backfill touched is read from below for all.
 */
async function readWindowFreshness(
  pool: DatabasePool,
  start: number,
  end: number,
): Promise<RollupFreshness> {
  const mode = await rollupMode(pool);
  const rows = await pool.any(sql.type(freshnessRow)`
    SELECT 'watermark' AS kind, level, watermark AS start, NULL::timestamptz AS "end"
    FROM rollup_watermarks
    UNION ALL
    SELECT 'stale', NULL, range_start, range_end
    FROM price_invalidations
    WHERE range_end >= ${ts(start)} AND range_start < ${ts(end)}
  `);
  const watermarks: RollupFreshness['watermarks'] = {};
  const stale: RollupFreshness['stale'] = [];
  for (const row of rows) {
    if (row.kind === 'stale') stale.push({ start: row.start!.getTime(), end: row.end!.getTime() });
    else if (mode === 'tables' && row.start) {
      watermarks[row.level as LevelName] = row.start.getTime();
    }
  }
  if (mode === 'continuous') for (const level of LEVELS) watermarks[level.name] = Infinity;
  const merged = mergeIntervals(stale);
  return {
    watermarks,
    stale:
      merged.length <= MAX_STALE_RANGES
        ? merged
        : [{ start: merged[0]!.start, end: Math.max(...merged.map((r) => r.end)) }],
  };
}

function segmentRows(segment: Segment): SqlFragment {
  if (segment.source === 'raw') {
    return sql.fragment`
      SELECT currency_code, open, high, low, volume, time AS first_time
      FROM price_observations
      WHERE time >= ${ts(segment.start)} AND time < ${ts(segment.end)}`;
  }
  const level = levelNamed(segment.source);
  return sql.fragment`
    SELECT currency_code, open, high, low, volume, first_time
    FROM ${sql.identifier([level.relation])}
    WHERE bucket >= ${ts(segment.start)} AND bucket < ${ts(segment.end)}`;
}

const ts = (ms: number) => sql.fragment`${new Date(ms).toISOString()}::timestamptz`;

/**
 * The statistics as of the latest harvest, computed once per harvest cycle: a new latest
 * snapshot instant or a new `version` (a change of the rows heard: src/shared/db/changeEvents.ts),
 * or `maxAgeMs` without either (so the window keeps sliding when nothing is harvested), computes
 * them again; concurrent callers share one computation.
 */
export class DayStatsCache {
  private current: { key: string; at: number; stats: Map<string, DayStats> } | undefined;
  private inflight: { key: string; promise: Promise<Map<string, DayStats>> } | undefined;

  private readonly pool: DatabasePool;
  private readonly maxAgeMs: number;

  constructor(pool: DatabasePool, maxAgeMs = 60_000) {
    this.pool = pool;
    this.maxAgeMs = maxAgeMs;
  }

  /** `latest`: the newest snapshot instant (epoch ms; 0 when there is none). */
  async get(latest: number, version = 0): Promise<Map<string, DayStats>> {
    const key = `${latest}:${version}`;
    const now = Date.now();
    const kept = this.current;
    if (kept && kept.key === key && now - kept.at < this.maxAgeMs) return kept.stats;
    if (this.inflight?.key === key) return this.inflight.promise;
    // The window ends now, or just after the latest price if that lies (slightly) ahead.
    const to = new Date(Math.max(now, latest + 1));
    const promise = readDayStats(this.pool, to).then((stats) => {
      this.current = { key, at: now, stats };
      return stats;
    });
    const entry = { key, promise };
    this.inflight = entry;
    try {
      return await promise;
    } finally {
      if (this.inflight === entry) this.inflight = undefined;
    }
  }
}

/** The contract's 24-hour fields of one currency (null where the last day has no price). */
export function dayFields(value: number, stats: DayStats | undefined) {
  if (!stats) {
    return { open24h: null, high24h: null, low24h: null, volume24h: null, change24h: null };
  }
  return {
    open24h: stats.open,
    high24h: stats.high,
    low24h: stats.low,
    volume24h: stats.volume,
    change24h: ((value - stats.open) / stats.open) * 100,
  };
}
