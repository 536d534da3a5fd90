import type pg from 'pg';
import type { Connect } from '../connection.ts';
import type { BinanceKlineClient, RawKline } from '../exchange/binanceKlines.ts';
import { exchangeSymbol, klinesToCandles } from '../exchange/exchangeBackfill.ts';
import { loadUnit } from '../loader.ts';

// Gap healing: the minutes of a look-back window (after a currency's first observation) that have
// no observation are fetched as one-minute candles from the exchange and loaded through the normal
// ingest path (never overwriting, source recorded, rollup ranges marked). Minutes the exchange does
// not have either are remembered in price_gaps, so they are not asked for again.

const MINUTE = 60_000;

export interface HealRange {
  fromMs: number;
  toMs: number;
}

export interface HealResult {
  code: string;
  /** Minutes without observation found in the window (known gaps excluded). */
  missing: number;
  filled: number;
  /** Minutes newly recorded as known gaps. */
  knownGaps: number;
  /** Another process held this currency's heal lock: nothing done. */
  skipped: boolean;
}

export interface HealOptions {
  lookbackHours: number;
  now?: number;
}

/** Missing minutes of one currency in [start, end) as contiguous ranges. */
export async function findGaps(
  client: pg.ClientBase,
  code: string,
  startMs: number,
  endMs: number,
): Promise<HealRange[]> {
  const { rows } = await client.query<{ minute: Date }>(
    `WITH first AS (
       SELECT min(time) AS t FROM price_observations WHERE currency_code = $1
     )
     SELECT m AS minute
       FROM first,
            generate_series(
              greatest(date_trunc('minute', first.t), to_timestamp($2::double precision / 1000)),
              to_timestamp($3::double precision / 1000) - interval '1 minute',
              interval '1 minute') AS m
      WHERE first.t IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM price_observations o
                         WHERE o.currency_code = $1 AND o.time >= m AND o.time < m + interval '1 minute')
        AND NOT EXISTS (SELECT 1 FROM price_gaps g WHERE g.currency_code = $1 AND g.minute = m)
      ORDER BY m`,
    [code, startMs, endMs],
  );
  const ranges: HealRange[] = [];
  for (const { minute } of rows) {
    const t = minute.getTime();
    const last = ranges[ranges.length - 1];
    if (last && last.toMs === t) last.toMs = t + MINUTE;
    else ranges.push({ fromMs: t, toMs: t + MINUTE });
  }
  return ranges;
}

/** Heals one currency; a session advisory lock keeps concurrent passes off the same currency. */
export async function healCurrency(
  connect: Connect,
  client: BinanceKlineClient,
  code: string,
  options: HealOptions,
): Promise<HealResult> {
  const now = options.now ?? Date.now();
  // Only closed minutes: the current one may still receive observations.
  const endMs = Math.floor(now / MINUTE) * MINUTE - MINUTE;
  const startMs = endMs - options.lookbackHours * 3_600_000;
  const result: HealResult = { code, missing: 0, filled: 0, knownGaps: 0, skipped: false };
  const connection = await connect();
  let broken: Error | undefined;
  try {
    const db = connection.client;
    const lock = await db.query<{ ok: boolean }>(
      `SELECT pg_try_advisory_lock(hashtext('heal:' || $1)) AS ok`,
      [code],
    );
    if (!lock.rows[0]?.ok) return { ...result, skipped: true };
    try {
      if (startMs >= endMs) return result;
      for (const range of await findGaps(db, code, startMs, endMs)) {
        result.missing += (range.toMs - range.fromMs) / MINUTE;
        const candles = await fetchRange(client, code, range);
        if (candles.length > 0) {
          const label = `heal binance ${code} ${new Date(range.fromMs).toISOString()}..${new Date(range.toMs).toISOString()}`;
          const loaded = await loadUnit(db, {
            key: null,
            kind: 'exchange',
            label,
            source: 'binance',
            rows: async function* () {
              yield { file: label, candles, rejections: [], bytes: 0 };
            },
            expected: [{ code, from: new Date(range.fromMs), to: new Date(range.toMs) }],
          });
          result.filled += loaded.inserted;
        }
        result.knownGaps += await rememberGaps(db, code, range);
      }
    } finally {
      await db.query(`SELECT pg_advisory_unlock(hashtext('heal:' || $1))`, [code]);
    }
    return result;
  } catch (error) {
    broken = error as Error;
    throw error;
  } finally {
    await connection.release(broken);
  }
}

async function fetchRange(client: BinanceKlineClient, code: string, range: HealRange) {
  const pages = client.klines(exchangeSymbol(code), '1m', MINUTE, range.fromMs, range.toMs);
  const raw: RawKline[] = [];
  for await (const page of pages) raw.push(...page);
  return klinesToCandles(raw, code).candles;
}

/** The minutes of a range still without observation after the fetch become known gaps. */
async function rememberGaps(db: pg.ClientBase, code: string, range: HealRange): Promise<number> {
  const { rowCount } = await db.query(
    `INSERT INTO price_gaps (currency_code, minute)
     SELECT $1, m
       FROM generate_series(to_timestamp($2::double precision / 1000),
                            to_timestamp($3::double precision / 1000) - interval '1 minute',
                            interval '1 minute') AS m
      WHERE NOT EXISTS (SELECT 1 FROM price_observations o
                         WHERE o.currency_code = $1 AND o.time >= m AND o.time < m + interval '1 minute')
     ON CONFLICT DO NOTHING`,
    [code, range.fromMs, range.toMs],
  );
  return rowCount ?? 0;
}

/** One pass over the given currencies (or every currency with observations). */
export async function healAll(
  connect: Connect,
  client: BinanceKlineClient,
  codes: string[],
  options: HealOptions,
): Promise<HealResult[]> {
  const results: HealResult[] = [];
  for (const code of codes) results.push(await healCurrency(connect, client, code, options));
  return results;
}

/** Every currency with at least one observation (healing starts after the first). */
export async function observedCodes(connect: Connect): Promise<string[]> {
  const connection = await connect();
  try {
    const { rows } = await connection.client.query<{ code: string }>(
      `SELECT code FROM currencies c
        WHERE EXISTS (SELECT 1 FROM price_observations o WHERE o.currency_code = c.code)
        ORDER BY code`,
    );
    return rows.map((r) => r.code);
  } finally {
    await connection.release();
  }
}
