import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Candle } from './prices.ts';

// Brute-force references computed in JavaScript straight from the raw candles the test wrote.

export interface Ohlcv {
  timestamp: string;
  open: number;
  high: number;
  low: number;
  close: number;
  volume: number;
  count: number;
}

/** A small deterministic PRNG (mulberry32), so a failing seed can be replayed. */
export function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** OHLCV of every non-empty bucket of width `seconds` aligned to `originMs`, inside [from, to). */
export function bruteForceCandles(
  candles: Candle[],
  code: string,
  seconds: number,
  from: number,
  to: number,
  originMs = 0,
): Ohlcv[] {
  const width = seconds * 1000;
  const sorted = candles
    .filter((c) => c.code === code && c.time.getTime() >= from && c.time.getTime() < to)
    .sort((a, b) => a.time.getTime() - b.time.getTime());
  const buckets = new Map<number, Ohlcv>();
  for (const c of sorted) {
    const start = Math.floor((c.time.getTime() - originMs) / width) * width + originMs;
    const high = c.high ?? Math.max(c.open, c.close ?? c.open);
    const low = c.low ?? Math.min(c.open, c.close ?? c.open);
    const close = c.close ?? c.open;
    const seen = buckets.get(start);
    if (!seen) {
      buckets.set(start, {
        timestamp: new Date(start).toISOString(),
        open: c.open,
        high,
        low,
        close,
        volume: c.volume ?? 0,
        count: 1,
      });
    } else {
      seen.high = Math.max(seen.high, high);
      seen.low = Math.min(seen.low, low);
      seen.close = close;
      seen.volume += c.volume ?? 0;
      seen.count += 1;
    }
  }
  return [...buckets.entries()].sort(([a], [b]) => a - b).map(([, v]) => v);
}

/** Random candles for `codes` over [start, end): bursts, quiet gaps, sub-second stamps. */
export function randomCandles(seed: number, codes: string[], start: number, end: number): Candle[] {
  const next = random(seed);
  const out: Candle[] = [];
  for (const code of codes) {
    let price = 100 + next() * 1000;
    let t = start + Math.floor(next() * 60_000);
    while (t < end) {
      const open = price;
      const close = Math.max(0.01, price * (1 + (next() - 0.5) * 0.02));
      out.push({
        code,
        time: new Date(t),
        open,
        close,
        high: Math.max(open, close) * (1 + next() * 0.01),
        low: Math.min(open, close) * (1 - next() * 0.01),
        // Quarters add up exactly in binary floating point, whatever the order of the sum.
        volume: Math.floor(next() * 400) / 4,
      });
      price = close;
      const roll = next();
      // Mostly a few seconds to two minutes apart; now and then a gap of hours.
      t += roll < 0.02 ? Math.floor(next() * 6 * 3_600_000) : 1 + Math.floor(next() * 120_000);
    }
  }
  return out;
}

/**
 * Local midnight of Monday 2000-01-03 in zones the tests use, written out rather than computed by
 * the code under test: buckets under a day in a zone are fixed in time from it.
 */
export const ZONE_ANCHORS: Record<string, number> = {
  UTC: Date.parse('2000-01-03T00:00:00Z'),
  'Europe/Berlin': Date.parse('2000-01-02T23:00:00Z'),
  'America/New_York': Date.parse('2000-01-03T05:00:00Z'),
  'Asia/Kolkata': Date.parse('2000-01-02T18:30:00Z'),
  'Asia/Kathmandu': Date.parse('2000-01-02T18:15:00Z'),
  'America/St_Johns': Date.parse('2000-01-03T03:30:00Z'),
  // Lord Howe's summer (+11:00) holds 2000-01-03; its winter is +10:30.
  'Australia/Lord_Howe': Date.parse('2000-01-02T13:00:00Z'),
};

/** Days and weeks in a zone from the local time of an instant, shifted (time_bucket's own). */
export interface WallClockAlignment {
  origin: Date;
  offsetSeconds: number;
}

/**
 * The reference bucket of a zone's grid as SQL over a timestamptz column: buckets under a day
 * fixed in time from the zone's anchor above, days and weeks by time_bucket with the zone.
 */
export function zoneBucketSql(
  seconds: number,
  timeZone: string,
  column: string,
  alignment?: WallClockAlignment,
) {
  const width = sql.fragment`make_interval(secs => ${seconds}::float8)`;
  const value = sql.identifier([column]);
  if (seconds >= 86_400 && alignment) {
    return sql.fragment`time_bucket(${width}, ${value}, ${timeZone}::text,
      origin => ${alignment.origin.toISOString()}::timestamptz,
      "offset" => make_interval(secs => ${alignment.offsetSeconds}::float8))`;
  }
  if (seconds >= 86_400) return sql.fragment`time_bucket(${width}, ${value}, ${timeZone}::text)`;
  const anchor = new Date(ZONE_ANCHORS[timeZone]!).toISOString();
  return sql.fragment`time_bucket(${width}, ${value}, ${anchor}::timestamptz)`;
}

/** Rows as the routes return them: ISO timestamps, plain numbers. */
export function asJson<T extends { timestamp: Date }>(rows: readonly T[]) {
  return rows.map((r) => ({ ...r, timestamp: r.timestamp.toISOString() }));
}

const sqlCandle = z.object({
  timestamp: z.date(),
  open: z.number(),
  high: z.number(),
  low: z.number(),
  close: z.number(),
  volume: z.number(),
  count: z.number(),
});

/** A currency's candles of [from, to) on a zone's grid (zoneBucketSql), by SQL over the raw rows alone. */
export async function zoneCandlesFromRaw(
  pool: CommonQueryMethods,
  code: string,
  seconds: number,
  timeZone: string,
  from: Date,
  to: Date,
  alignment?: WallClockAlignment,
) {
  return asJson(
    await pool.any(sql.type(sqlCandle)`
      SELECT ${zoneBucketSql(seconds, timeZone, 'time', alignment)} AS timestamp,
             first(open, time) AS open, max(high) AS high, min(low) AS low,
             last(close, time) AS close, sum(volume) AS volume, count(*)::int AS count
      FROM price_observations
      WHERE currency_code = ${code} AND time >= ${from.toISOString()}::timestamptz
        AND time < ${to.toISOString()}::timestamptz
      GROUP BY 1 ORDER BY 1
    `),
  );
}
