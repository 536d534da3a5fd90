import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { dedicatedConnection } from '../../src/data/ingest/connection.ts';
import { BinanceKlineClient, ExchangeError } from '../../src/data/ingest/exchange/binanceKlines.ts';
import {
  importExchangeSlice,
  planSlices,
} from '../../src/data/ingest/exchange/exchangeBackfill.ts';
import type { UnitResult } from '../../src/data/ingest/types.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { FakeBinance } from './fakeBinance.ts';
import { MINUTE } from './fixtures.ts';

let runtime: TestRuntime;
let fake: FakeBinance;
let waits: Array<{ reason: string; ms: number }>;

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  fake = await new FakeBinance().start();
});

afterAll(async () => {
  await fake.stop();
  await runtime.dispose();
});

beforeEach(() => {
  fake.requests.length = 0;
  fake.faults.length = 0;
  fake.failAlwaysFrom = null;
  waits = [];
});

/** A client whose waits are recorded and skipped, so tests do not spend Retry-After for real. */
function client(options: Partial<ConstructorParameters<typeof BinanceKlineClient>[0]> = {}) {
  return new BinanceKlineClient({
    baseUrl: fake.url,
    timeoutMs: 2000,
    maxRetries: 3,
    backoffMs: 10,
    sleep: async () => {},
    onWait: (reason, ms) => waits.push({ reason, ms }),
    ...options,
  });
}

async function backfill(code: string, from: Date, to: Date, api = client()): Promise<UnitResult[]> {
  const connect = dedicatedConnection(runtime.config.DATABASE_URL);
  const results: UnitResult[] = [];
  for (const slice of planSlices({ code, symbol: `${code}USDT`, interval: '1m', from, to })) {
    results.push(await importExchangeSlice(connect, api, slice));
  }
  return results;
}

const countOf = (code: string) =>
  runtime.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM price_observations WHERE currency_code = ${code}`);

describe('Binance REST backfill', () => {
  test('pages through 1000-candle answers, one-day slices, every candle stored once', async () => {
    const from = new Date(Date.UTC(2024, 0, 1));
    const to = new Date(from.getTime() + 3000 * MINUTE);
    const results = await backfill('BTC', from, to);
    expect(results.map((r) => [r.status, r.inserted])).toEqual([
      ['loaded', 1440],
      ['loaded', 1440],
      ['loaded', 120],
    ]);
    // 1440 = 1000 + 440 per day; the last slice needs one page.
    expect(fake.requests).toHaveLength(5);
    expect(fake.requests.map((u) => Number(u.searchParams.get('startTime')))).toEqual([
      from.getTime(),
      from.getTime() + 1000 * MINUTE,
      from.getTime() + 1440 * MINUTE,
      from.getTime() + 2440 * MINUTE,
      from.getTime() + 2880 * MINUTE,
    ]);
    expect(fake.requests[0]?.searchParams.get('limit')).toBe('1000');
    expect(fake.requests[0]?.searchParams.get('interval')).toBe('1m');
    expect(await countOf('BTC')).toBe(3000);
    const source = await runtime.pool.anyFirst(
      sql.type(
        z.object({ source: z.string() }),
      )`SELECT DISTINCT source FROM price_observations WHERE currency_code = 'BTC'`,
    );
    expect(source).toEqual(['binance']);
  });

  test('a rerun resumes: completed slices are neither fetched nor written again', async () => {
    const from = new Date(Date.UTC(2024, 0, 1));
    const results = await backfill('BTC', from, new Date(from.getTime() + 3000 * MINUTE));
    expect(results.map((r) => r.status)).toEqual(['skipped', 'skipped', 'skipped']);
    expect(fake.requests).toHaveLength(0);
  });

  test('an interrupted backfill resumes at the first unfinished slice and ends exact', async () => {
    const from = new Date(Date.UTC(2023, 0, 1));
    const to = new Date(from.getTime() + 3 * 1440 * MINUTE);
    fake.failAlwaysFrom = 3; // the second day's first page fails for good
    await expect(backfill('ETH', from, to)).rejects.toThrow(/after 4 attempts/);
    expect(await countOf('ETH')).toBe(1440);
    fake.failAlwaysFrom = null;
    fake.requests.length = 0;
    const results = await backfill('ETH', from, to);
    expect(results.map((r) => r.status)).toEqual(['skipped', 'loaded', 'loaded']);
    expect(Number(fake.requests[0]?.searchParams.get('startTime'))).toBe(
      from.getTime() + 1440 * MINUTE,
    );
    expect(await countOf('ETH')).toBe(3 * 1440);
  });

  test('429 waits for Retry-After and then carries on', async () => {
    fake.faults.push({ status: 429, retryAfter: 7 });
    const from = new Date(Date.UTC(2022, 0, 1));
    const [result] = await backfill('SOL', from, new Date(from.getTime() + 10 * MINUTE));
    expect(result).toMatchObject({ status: 'loaded', inserted: 10 });
    expect(waits).toEqual([{ reason: '429 rate limited', ms: 7000 }]);
    expect(fake.requests).toHaveLength(2);
  });

  test('429 with a real one-second Retry-After is honoured in time', async () => {
    fake.faults.push({ status: 429, retryAfter: 1 });
    const api = new BinanceKlineClient({ baseUrl: fake.url, timeoutMs: 2000 });
    const started = Date.now();
    const pages = [];
    for await (const page of api.klines(
      'XRPUSDT',
      '1m',
      MINUTE,
      Date.UTC(2022, 0, 1),
      Date.UTC(2022, 0, 1) + 5 * MINUTE,
    )) {
      pages.push(page);
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(pages.flat()).toHaveLength(5);
  });

  test('5xx answers are retried with growing back-off', async () => {
    fake.faults.push({ status: 503 }, { status: 502 });
    const from = new Date(Date.UTC(2022, 1, 1));
    const [result] = await backfill('ADA', from, new Date(from.getTime() + 3 * MINUTE));
    expect(result).toMatchObject({ status: 'loaded', inserted: 3 });
    expect(waits.map((w) => w.ms)).toEqual([10, 20]);
    expect(fake.requests).toHaveLength(3);
  });

  test('a request that hangs times out and is retried', async () => {
    fake.faults.push({ hangMs: 5000 });
    const from = new Date(Date.UTC(2022, 2, 1));
    const [result] = await backfill(
      'DOGE',
      from,
      new Date(from.getTime() + 4 * MINUTE),
      client({ timeoutMs: 300 }),
    );
    expect(result).toMatchObject({ status: 'loaded', inserted: 4 });
    expect(waits[0]?.reason).toBe('request timed out');
  });

  test('418 (IP banned) stops at once', async () => {
    fake.faults.push({ status: 418, retryAfter: 120 });
    const from = new Date(Date.UTC(2022, 3, 1));
    const error = await backfill('LINK', from, new Date(from.getTime() + 4 * MINUTE)).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ExchangeError);
    expect((error as Error).message).toMatch(/banned.*120 s/);
    expect(fake.requests).toHaveLength(1);
    expect(await countOf('LINK')).toBe(0);
  });

  test('a 4xx refusal is not retried and says why', async () => {
    fake.faults.push({ status: 400 });
    const from = new Date(Date.UTC(2022, 3, 1));
    await expect(backfill('LINK', from, new Date(from.getTime() + 4 * MINUTE))).rejects.toThrow(
      /Invalid symbol/,
    );
    expect(fake.requests).toHaveLength(1);
  });

  test('high used weight pauses until the next minute', async () => {
    fake.faults.push({ weight: 5900 });
    const from = new Date(Date.UTC(2022, 4, 1));
    await backfill(
      'BNB',
      from,
      new Date(from.getTime() + 4 * MINUTE),
      client({ now: () => Date.UTC(2022, 4, 1, 0, 0, 45) }),
    );
    expect(waits).toEqual([{ reason: 'request weight 5900/6000', ms: 15_500 }]);
  });

  test('a malformed kline is rejected with its position; the others are stored', async () => {
    fake.faults.push({ malformed: true });
    const from = new Date(Date.UTC(2022, 5, 1));
    const [result] = await backfill('TRX', from, new Date(from.getTime() + 5 * MINUTE));
    expect(result).toMatchObject({ status: 'loaded', read: 5, inserted: 4, rejected: 1 });
    expect(result?.rejections[0]).toMatchObject({
      line: 2,
      reason: 'a price or the volume is not a number',
    });
  });

  test('a slice reaching past the last closed candle is stored but not recorded as complete', async () => {
    const now = Date.now();
    const from = new Date(now - 30 * MINUTE);
    fake.until = now;
    const first = await backfill('AVAX', from, new Date(now + 60 * MINUTE));
    expect(first.every((r) => r.status === 'loaded')).toBe(true);
    const again = await backfill('AVAX', from, new Date(now + 60 * MINUTE));
    expect(again.every((r) => r.status === 'loaded')).toBe(true);
    expect(again.reduce((s, r) => s + r.duplicates, 0)).toBeGreaterThan(0);
  });
});
