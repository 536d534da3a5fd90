import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';

export interface Candle {
  code: string;
  time: Date;
  open: number;
  high?: number;
  low?: number;
  close?: number;
  volume?: number;
}

/** Writes candles straight into the hypertable (a harvested price is a candle of equal prices). */
export async function insertCandles(pool: CommonQueryMethods, candles: Candle[], source = 'test') {
  const rows = candles.map((c) => ({
    code: c.code,
    time: c.time.toISOString(),
    open: c.open,
    high: c.high ?? Math.max(c.open, c.close ?? c.open),
    low: c.low ?? Math.min(c.open, c.close ?? c.open),
    close: c.close ?? c.open,
    volume: c.volume ?? 0,
  }));
  await pool.query(sql.unsafe`
    INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
    SELECT code, time, open, high, low, close, volume, ${source}
    FROM jsonb_to_recordset(${sql.jsonb(rows)})
      AS x(code text, time timestamptz, open float8, high float8, low float8, close float8, volume float8)
  `);
}

export async function setSnapshot(
  pool: DatabasePool,
  code: string,
  price: number,
  observedAt: Date,
) {
  await pool.query(sql.unsafe`
    INSERT INTO currency_snapshots (currency_code, price, observed_at, source)
    VALUES (${code}, ${price}, ${sql.timestamp(observedAt)}, 'test')
    ON CONFLICT (currency_code) DO UPDATE SET price = EXCLUDED.price, observed_at = EXCLUDED.observed_at
  `);
}

/** Brute-force reference: first price of each epoch-aligned bucket, from raw candles in JS. */
export function expectedFirstPerBucket(
  candles: Candle[],
  intervalSeconds: number,
  from: Date,
  to: Date,
) {
  const width = intervalSeconds * 1000;
  const buckets = new Map<number, Candle>();
  for (const c of candles) {
    const t = c.time.getTime();
    if (t < from.getTime() || t >= to.getTime()) continue;
    const start = Math.floor(t / width) * width;
    const seen = buckets.get(start);
    if (!seen || seen.time.getTime() > t) buckets.set(start, c);
  }
  return [...buckets.entries()]
    .sort(([a], [b]) => a - b)
    .map(([start, c]) => ({ timestamp: new Date(start).toISOString(), value: c.open }));
}

/**
 * Writes a generic CSV of `rows` one-minute prices of one currency from `startMs` on. It is
 * written in 1 MiB chunks, so files of millions of rows (a worker killed mid-import, a backfill
 * under load) take no more memory than a small one.
 */
export async function writeMinutePricesCsv(
  path: string,
  code: string,
  rows: number,
  { startMs, price }: { startMs: number; price: (i: number) => string },
): Promise<string> {
  const out = createWriteStream(path);
  out.write('time,code,open,high,low,close,volume\n');
  let chunk = '';
  for (let i = 0; i < rows; i++) {
    const p = price(i);
    chunk += `${new Date(startMs + i * 60_000).toISOString()},${code},${p},${p},${p},${p},1\n`;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
  return path;
}
