import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

// Synthetic history for the benchmark: `currencies` × one year of one-minute candles ending now,
// written with one INSERT … SELECT generate_series per currency (the fastest path that needs no
// files). Prices follow a deterministic walk of sines plus noise; every candle is a real OHLCV.

export const BENCH_CODES = Array.from(
  { length: 50 },
  (_, i) => `BENCH${String(i).padStart(2, '0')}`,
);

export async function generateHistory(
  pool: DatabasePool,
  codes: string[],
  days: number,
  log: (line: string) => void,
): Promise<void> {
  const end = new Date(Math.floor(Date.now() / 60_000) * 60_000);
  const start = new Date(end.getTime() - days * 86_400_000);
  for (const [index, code] of codes.entries()) {
    const started = Date.now();
    await pool.query(sql.unsafe`
      INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
      SELECT ${code}, t, o, greatest(o, c) * (1 + random() * 0.002), least(o, c) * (1 - random() * 0.002),
             c, round((random() * 40)::numeric, 2)::float8, 'bench'
      FROM (
        SELECT t,
               ${100 + index * 37}::float8 * (1.5 + sin(extract(epoch FROM t) / 86400.0 / 7 + ${index})
                 + 0.2 * sin(extract(epoch FROM t) / 3600.0)) AS o,
               ${100 + index * 37}::float8 * (1.5 + sin((extract(epoch FROM t) + 60) / 86400.0 / 7 + ${index})
                 + 0.2 * sin((extract(epoch FROM t) + 60) / 3600.0)) * (1 + (random() - 0.5) * 0.001) AS c
        FROM generate_series(${start.toISOString()}::timestamptz, ${end.toISOString()}::timestamptz - interval '1 minute', interval '1 minute') AS t
      ) AS walk
      ON CONFLICT DO NOTHING
    `);
    log(`  ${code}: ${days} days of minutes in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
}

export async function countRows(pool: DatabasePool): Promise<number> {
  return pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::float8 AS n FROM price_observations WHERE source = 'bench'
    `,
  );
}
