import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { dedicatedConnection } from '../../src/data/ingest/connection.ts';
import { BinanceKlineClient } from '../../src/data/ingest/exchange/binanceKlines.ts';
import type { CandleSource } from '../../src/data/ingest/exchange/candleSource.ts';
import { CoinbaseCandleClient } from '../../src/data/ingest/exchange/coinbaseCandles.ts';
import {
  importExchangeSlice,
  planSlices,
} from '../../src/data/ingest/exchange/exchangeBackfill.ts';
import { KrakenOhlcClient } from '../../src/data/ingest/exchange/krakenOhlc.ts';
import { historySourceNames } from '../../src/data/ingest/exchange/sources.ts';
import { healCurrency } from '../../src/data/ingest/heal/heal.ts';
import type { UnitResult } from '../../src/data/ingest/types.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { FakeBinance } from './fakeBinance.ts';
import { FakeCoinbase, FakeKraken } from './fakeHistory.ts';
import { MINUTE } from './fixtures.ts';

const HOUR = 60 * MINUTE;
let runtime: TestRuntime;
let binance: FakeBinance;
let coinbase: FakeCoinbase;
let kraken: FakeKraken;
let waits: Array<{ reason: string; ms: number }>;

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  [binance, coinbase, kraken] = await Promise.all([
    new FakeBinance().start(),
    new FakeCoinbase().start(),
    new FakeKraken().start(),
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.all([binance.stop(), coinbase.stop(), kraken.stop()]);
  await runtime.dispose();
});

beforeEach(() => {
  coinbase.reset();
  kraken.reset();
  binance.requests.length = 0;
  binance.faults.length = 0;
  binance.until = Date.now();
  coinbase.hasTrades = () => true;
  waits = [];
});

/** Waits are recorded and skipped; the clock is `now` (Kraken's 720-candle horizon moves with it). */
const patience = (now = Date.now()) => ({
  timeoutMs: 2000,
  maxRetries: 3,
  backoffMs: 10,
  minSpacingMs: 0,
  now: () => now,
  sleep: async () => {},
  onWait: (reason: string, ms: number) => waits.push({ reason, ms }),
});
const coinbaseClient = (now?: number) =>
  new CoinbaseCandleClient({ baseUrl: coinbase.url, ...patience(now) });
const krakenClient = (now?: number) =>
  new KrakenOhlcClient({ baseUrl: kraken.url, ...patience(now) });
const binanceClient = () => new BinanceKlineClient({ baseUrl: binance.url, ...patience() });

async function backfill(source: CandleSource, code: string, from: number, to: number) {
  const connect = dedicatedConnection(runtime.config.DATABASE_URL);
  const results: UnitResult[] = [];
  const slices = planSlices({
    code,
    symbol: source.symbol(code),
    interval: '1m',
    from: new Date(from),
    to: new Date(to),
    source: source.name,
  });
  for (const slice of slices) results.push(await importExchangeSlice(connect, source, slice));
  return results;
}

const rowsBySource = (code: string) =>
  runtime.pool.any(sql.type(z.object({ source: z.string(), n: z.number() }))`
    SELECT source, count(*)::int AS n FROM price_observations
     WHERE currency_code = ${code} GROUP BY source ORDER BY source`);

describe('Coinbase Exchange candles', () => {
  test('pages 300 candles a call; minutes without trades simply have no row', async () => {
    const from = Date.UTC(2024, 0, 1);
    coinbase.hasTrades = (t) => (t / MINUTE) % 100 !== 7; // a quiet minute every 100
    const [result] = await backfill(coinbaseClient(), 'ETH', from, from + 1440 * MINUTE);
    expect(result).toMatchObject({ status: 'loaded', inserted: 1440 - 14 });
    // 1440 = 4 × 300 + 240: five calls, each asking an inclusive range of at most 300 minutes.
    expect(coinbase.requests.map((u) => u.searchParams.get('start'))).toEqual([
      '2024-01-01T00:00:00Z',
      '2024-01-01T05:00:00Z',
      '2024-01-01T10:00:00Z',
      '2024-01-01T15:00:00Z',
      '2024-01-01T20:00:00Z',
    ]);
    expect(coinbase.requests[0]?.searchParams.get('end')).toBe('2024-01-01T04:59:00Z');
    expect(coinbase.requests[0]?.pathname).toBe('/products/ETH-USD/candles');
    expect(await rowsBySource('ETH')).toEqual([{ source: 'coinbase', n: 1440 - 14 }]);
    // Coinbase's field order (low, high, open, close) is put right.
    const wrong = await runtime.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM price_observations
       WHERE currency_code = 'ETH' AND NOT (low <= open AND open <= high AND low <= close)`);
    expect(wrong).toBe(0);
  });

  test('429 waits for Retry-After, 5xx backs off, then the page is fetched', async () => {
    coinbase.faults.push({ status: 429, retryAfter: 3 }, { status: 502 });
    const from = Date.UTC(2023, 5, 1);
    const [result] = await backfill(coinbaseClient(), 'SOL', from, from + 20 * MINUTE);
    expect(result).toMatchObject({ status: 'loaded', inserted: 20 });
    expect(waits).toEqual([
      { reason: '429 rate limited', ms: 3000 },
      { reason: 'Coinbase answered 502', ms: 10 },
    ]);
    expect(coinbase.requests).toHaveLength(3);
  });

  test('an unlisted product is refused with the exchange’s reason', async () => {
    const from = Date.UTC(2023, 5, 1);
    await expect(backfill(coinbaseClient(), 'TRX', from, from + 5 * MINUTE)).rejects.toThrow(
      /Coinbase refused the request \(404\): NotFound/,
    );
  });

  test('lists the currencies it trades against USD', async () => {
    expect(await coinbaseClient().listed(['BTC', 'TRX', 'ETH'])).toEqual(new Set(['BTC', 'ETH']));
  });
});

describe('Kraken OHLC', () => {
  test('only the last 720 candles exist: older slices are not asked for, what exists is loaded', async () => {
    const now = Math.floor(Date.now() / MINUTE) * MINUTE;
    kraken.until = now;
    const from = now - 30 * HOUR;
    const results = await backfill(krakenClient(now), 'BTC', from, now);
    const inserted = results.reduce((sum, r) => sum + r.inserted, 0);
    // The 720 kept candles end with the one still open at `now`, outside [from, now).
    expect(inserted).toBe(719);
    // One call per slice that reaches into the last 720 minutes; the rest are not asked for.
    expect(kraken.requests.length).toBeLessThanOrEqual(2);
    expect(kraken.requests.every((u) => u.searchParams.get('pair') === 'XBTUSD')).toBe(true);
    expect(await rowsBySource('BTC')).toEqual([{ source: 'kraken', n: 719 }]);
  });

  test('a rate limit said in the body is waited out, then the call repeated', async () => {
    const now = Math.floor(Date.now() / MINUTE) * MINUTE;
    kraken.until = now;
    kraken.faults.push({ bodyError: 'EGeneral:Too many requests' }, { status: 429, retryAfter: 2 });
    const results = await backfill(krakenClient(now), 'XRP', now - 10 * MINUTE, now);
    expect(results.reduce((sum, r) => sum + r.inserted, 0)).toBe(10);
    expect(waits).toEqual([
      { reason: 'rate limited (said in the answer)', ms: 15_000 },
      { reason: '429 rate limited', ms: 2000 },
    ]);
  });

  test('lists pairs under Kraken’s own asset names', async () => {
    expect(await krakenClient().listed(['BTC', 'DOGE', 'TRX'])).toEqual(new Set(['BTC', 'DOGE']));
  });
});

describe('healing across exchanges in MARKET_SOURCE order', () => {
  const NOW = Date.UTC(2024, 2, 1, 12, 0);

  async function observe(code: string, from: number, to: number, hole: [number, number]) {
    await runtime.pool.query(sql.unsafe`
      INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
      SELECT ${code}, m, 1, 1, 1, 1, 0, 'harvest'
        FROM generate_series(to_timestamp(${from / 1000}), to_timestamp(${to / 1000 - 60}),
                             interval '1 minute') AS m
       WHERE m < to_timestamp(${hole[0] / 1000}) OR m >= to_timestamp(${hole[1] / 1000})`);
  }
  const heal = (code: string, sources: CandleSource[]) =>
    healCurrency(dedicatedConnection(runtime.config.DATABASE_URL), sources, code, {
      lookbackHours: 6,
      now: NOW,
    });

  test('MARKET_SOURCE order, the simulated market skipped; Binance when no exchange is named', () => {
    expect(historySourceNames({ MARKET_SOURCE: 'simulated' })).toEqual(['binance']);
    expect(historySourceNames({ MARKET_SOURCE: 'kraken,simulated,coinbase' })).toEqual([
      'kraken',
      'coinbase',
    ]);
  });

  test('what the first exchange lacks is asked of the next; what none has is a known gap', async () => {
    const hole: [number, number] = [NOW - 2 * HOUR, NOW - 2 * HOUR + 30 * MINUTE];
    await observe('ADA', NOW - 3 * HOUR, NOW, hole);
    binance.until = hole[0] + 9 * MINUTE; // Binance has the hole's first ten minutes
    const quiet = hole[0] + 20 * MINUTE; // no trade at Coinbase in that minute
    coinbase.hasTrades = (t) => t !== quiet;
    const result = await heal('ADA', [binanceClient(), coinbaseClient(NOW)]);
    expect(result).toMatchObject({
      missing: 30,
      filled: 29,
      knownGaps: 1,
      bySource: { binance: 10, coinbase: 19 },
      errors: [],
    });
    expect(coinbase.requests).toHaveLength(1);
    expect(coinbase.requests[0]?.searchParams.get('start')).toBe(
      new Date(hole[0] + 10 * MINUTE).toISOString().replace('.000Z', 'Z'),
    );
    expect(await rowsBySource('ADA')).toEqual([
      { source: 'binance', n: 10 },
      { source: 'coinbase', n: 19 },
      { source: 'harvest', n: 180 - 30 },
    ]);
    coinbase.requests.length = 0;
    binance.requests.length = 0;
    expect(await heal('ADA', [binanceClient(), coinbaseClient(NOW)])).toMatchObject({
      missing: 0,
    });
    expect(coinbase.requests.length + binance.requests.length).toBe(0);
  });

  test('a currency an exchange does not list goes to the next one', async () => {
    const hole: [number, number] = [NOW - HOUR, NOW - HOUR + 15 * MINUTE];
    await observe('LTC', NOW - 2 * HOUR, NOW, hole);
    kraken.listed = new Set(['BTC']);
    kraken.until = NOW;
    const result = await heal('LTC', [krakenClient(NOW), coinbaseClient(NOW)]);
    expect(result).toMatchObject({ filled: 15, knownGaps: 0, bySource: { coinbase: 15 } });
    expect(kraken.requests).toHaveLength(1);
  });

  test('an exchange that is down leaves the minutes open (no known gap) and says so', async () => {
    const hole: [number, number] = [NOW - HOUR, NOW - HOUR + 5 * MINUTE];
    await observe('DOGE', NOW - 2 * HOUR, NOW, hole);
    coinbase.failAlwaysFrom = 1;
    const result = await heal('DOGE', [coinbaseClient(NOW)]);
    expect(result).toMatchObject({ missing: 5, filled: 0, knownGaps: 0 });
    expect(result.errors[0]).toMatch(/coinbase: Coinbase request failed after 4 attempts/);
    coinbase.failAlwaysFrom = null;
    expect(await heal('DOGE', [coinbaseClient(NOW)])).toMatchObject({ missing: 5, filled: 5 });
  });
});
