import type pg from 'pg';
import { intervalMs } from './intervals.ts';
import { planSlices, type ExchangeSlice, type ExchangeSource } from './exchangeBackfill.ts';

// Incremental backfill (what freqtrade users know as download-data with --days / --prepend): the
// range of each currency follows from what is already stored, so a rerun asks only for what is
// still missing. Slices are loaded and recorded one by one, so a killed run loses at most the
// slice in flight, and the next run starts where the stored rows end.

const DAY_MS = 86_400_000;

export type RangeMode =
  /** From each currency's last stored candle to now; `days` back from now when it has none. */
  | { kind: 'since-last'; days?: number }
  /** `days` back from the earliest stored candle (currencies without any are left alone). */
  | { kind: 'prepend'; days: number }
  /** The last `days` days up to now. */
  | { kind: 'days'; days: number }
  | { kind: 'between'; fromMs: number; toMs: number };

export interface StoredRange {
  firstMs: number;
  lastMs: number;
}

export type CurrencyPlan =
  | { code: string; fromMs: number; toMs: number; slices: ExchangeSlice[] }
  | { code: string; skip: string };

/** The first and last stored instant of each of `codes` (two index probes per currency). */
export async function storedRanges(
  client: pg.ClientBase,
  codes: string[],
): Promise<Map<string, StoredRange>> {
  const result = await client.query<{ code: string; first: Date; last: Date }>(
    `SELECT c.code,
            (SELECT time FROM price_observations o WHERE o.currency_code = c.code
              ORDER BY time ASC LIMIT 1) AS first,
            (SELECT time FROM price_observations o WHERE o.currency_code = c.code
              ORDER BY time DESC LIMIT 1) AS last
       FROM unnest($1::text[]) AS c(code)`,
    [codes],
  );
  const ranges = new Map<string, StoredRange>();
  for (const row of result.rows) {
    if (row.first && row.last)
      ranges.set(row.code, { firstMs: row.first.getTime(), lastMs: row.last.getTime() });
  }
  return ranges;
}

/** The currencies of the list in list order (rank, then code). */
export async function listedCurrencyCodes(client: pg.ClientBase): Promise<string[]> {
  const result = await client.query<{ code: string }>(
    'SELECT code FROM currencies ORDER BY rank NULLS LAST, code',
  );
  return result.rows.map((r) => r.code);
}

/**
 * What to ask the exchange for one currency. Ranges are aligned to the candle size; the start of
 * `since-last` is the candle after the one holding the last stored instant, so nothing stored is
 * asked for again. Prepended slices come newest first: a killed run leaves no hole behind the
 * stored history.
 */
export function planCurrency(spec: {
  code: string;
  symbol: string;
  source: ExchangeSource;
  interval: string;
  mode: RangeMode;
  stored: StoredRange | undefined;
  nowMs: number;
  /** The earliest candle the exchange still serves (Kraken), when it keeps only recent ones. */
  horizonMs?: number;
}): CurrencyPlan {
  const { code, mode, stored, nowMs } = spec;
  const step = intervalMs(spec.interval);
  const floor = (ms: number) => Math.floor(ms / step) * step;
  let fromMs: number;
  let toMs = nowMs;
  switch (mode.kind) {
    case 'since-last':
      if (stored) fromMs = floor(stored.lastMs) + step;
      else if (mode.days !== undefined) fromMs = floor(nowMs - mode.days * DAY_MS);
      else return { code, skip: 'no stored candle (give --days N to load those)' };
      break;
    case 'prepend':
      if (!stored) return { code, skip: 'no stored candle to prepend to' };
      toMs = floor(stored.firstMs);
      fromMs = toMs - mode.days * DAY_MS;
      break;
    case 'days':
      fromMs = floor(nowMs - mode.days * DAY_MS);
      break;
    case 'between':
      fromMs = mode.fromMs;
      toMs = mode.toMs;
      break;
  }
  if (spec.horizonMs !== undefined && fromMs < spec.horizonMs) {
    if (toMs <= spec.horizonMs) return { code, skip: 'older than the candles the exchange keeps' };
    fromMs = spec.horizonMs;
  }
  if (fromMs >= toMs) return { code, skip: 'up to date' };
  const slices = planSlices({
    code,
    symbol: spec.symbol,
    interval: spec.interval,
    from: new Date(fromMs),
    to: new Date(toMs),
    source: spec.source,
  });
  if (mode.kind === 'prepend') slices.reverse();
  return { code, fromMs, toMs, slices };
}
