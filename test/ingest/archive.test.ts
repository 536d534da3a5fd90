import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { spawn } from 'node:child_process';
import { PLATFORM_BIN, runCli, waitForExit } from '../support/cli.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { until } from '../support/wait.ts';
import { FakeBinance } from './fakeBinance.ts';
import { FakeBinanceArchive } from './fakeBinanceArchive.ts';
import { klineValues, MINUTE } from './fixtures.ts';

// `platform backfill --source binance-archive`, run as a user would against a local stand-in for
// data.binance.vision (monthly and daily zips with their .CHECKSUM) and for Binance's REST
// klines, which complete what no archive holds.

jest.setTimeout(300_000);
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** The fake REST history ends a minute an hour ago, so "now" ranges have a known end. */
const END = Math.floor(Date.now() / MINUTE) * MINUTE - HOUR;

let runtime: TestRuntime;
let binance: FakeBinance;
let archive: FakeBinanceArchive;

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  binance = await new FakeBinance().start();
  binance.until = END - 1;
  archive = await new FakeBinanceArchive().start();
});

afterAll(async () => {
  await binance.stop();
  await archive.stop();
  await runtime.dispose();
});

const env = () => ({
  DATABASE_URL: runtime.config.DATABASE_URL,
  BINANCE_API_URL: binance.url,
  BINANCE_ARCHIVE_URL: archive.url,
});
const backfill = (...args: string[]) =>
  runCli(['backfill', '--source', 'binance-archive', ...args], env());

interface Report {
  source: string;
  totals: { inserted: number; duplicates: number; rejected: number };
  currencies: Array<{
    code: string;
    status: string;
    inserted: number;
    duplicates: number;
    archives: { monthly: number; daily: number; skipped: number; missing: number; refused: number };
    restSlices: number;
  }>;
}

const stored = (code: string, from: number, to: number) =>
  runtime.pool.one(sql.type(
    z.object({
      n: z.number(),
      distinct: z.number(),
      first: z.number().nullable(),
      last: z.number().nullable(),
    }),
  )`
    SELECT count(*)::int AS n, count(DISTINCT time)::int AS distinct,
           (extract(epoch FROM min(time)) * 1000)::float8 AS first,
           (extract(epoch FROM max(time)) * 1000)::float8 AS last
      FROM price_observations
     WHERE currency_code = ${code} AND time >= to_timestamp(${from / 1000})
       AND time < to_timestamp(${to / 1000})`);

/** The close stored for a minute, next to the one both fakes serve for it. */
async function closeAt(code: string, t: number) {
  const row = await runtime.pool.maybeOne(sql.type(z.object({ close: z.number() }))`
    SELECT close FROM price_observations
     WHERE currency_code = ${code} AND time = to_timestamp(${t / 1000})`);
  return { stored: row?.close, served: Number(klineValues(t / MINUTE, 40_000).close.toFixed(8)) };
}

const klineRequests = () => binance.requests.filter((u) => u.pathname === '/api/v3/klines');

describe('platform backfill --source binance-archive', () => {
  const from = Date.UTC(2025, 9, 1);
  const to = Date.UTC(2025, 11, 2, 6);

  test('a monthly archive, daily ones (a month not published) and REST completion load every minute once', async () => {
    archive.missing.add('BTCUSDT-1m-2025-11.zip');
    archive.missing.add('BTCUSDT-1m-2025-11-15.zip');
    const result = await backfill(
      '--code',
      'BTC',
      '--from',
      '2025-10-01',
      '--to',
      '2025-12-02T06:00',
      '--json',
    );
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    const report = JSON.parse(result.stdout) as Report;
    const minutes = (to - from) / MINUTE;
    expect(report.source).toBe('binance-archive');
    expect(report.totals).toEqual(
      expect.objectContaining({ inserted: minutes, duplicates: 0, rejected: 0 }),
    );
    expect(report.currencies[0]).toMatchObject({
      code: 'BTC',
      status: 'loaded',
      archives: { monthly: 1, daily: 30, skipped: 0, missing: 2, refused: 0 },
      // 15 November (its daily archive is missing) and the morning of 2 December.
      restSlices: 2,
    });
    expect(await stored('BTC', from, to)).toEqual({
      n: minutes,
      distinct: minutes,
      first: from,
      last: to - MINUTE,
    });
    // Each archive was downloaded once; the missing ones were asked for, then replaced.
    const zips = archive.zipRequests();
    expect(new Set(zips).size).toBe(zips.length);
    expect(zips).toContain('/data/spot/monthly/klines/BTCUSDT/1m/BTCUSDT-1m-2025-10.zip');
    expect(zips).toContain('/data/spot/daily/klines/BTCUSDT/1m/BTCUSDT-1m-2025-12-01.zip');
    expect(zips.filter((p) => p.includes('/daily/'))).toHaveLength(30);
    // µs timestamps (2025 archives) and REST's ms land on the same minutes with the same prices.
    for (const t of [
      from + 7 * MINUTE,
      Date.UTC(2025, 10, 15, 12),
      Date.UTC(2025, 10, 20, 3, 17),
      Date.UTC(2025, 11, 2, 5, 59),
    ]) {
      const close = await closeAt('BTC', t);
      expect(close.stored).toBeCloseTo(close.served, 6);
    }
  });

  test('a rerun downloads and loads nothing twice', async () => {
    const zipsBefore = archive.requests.length;
    const klinesBefore = klineRequests().length;
    const result = await backfill(
      '--code',
      'BTC',
      '--from',
      '2025-10-01',
      '--to',
      '2025-12-02T06:00',
      '--json',
    );
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    const report = JSON.parse(result.stdout) as Report;
    expect(report.totals).toEqual(
      expect.objectContaining({ inserted: 0, duplicates: 0, rejected: 0 }),
    );
    // The monthly, the 30 daily archives and the 2 REST slices are recorded: nothing is fetched.
    expect(archive.requests.length - zipsBefore).toBe(0);
    expect(klineRequests().length - klinesBefore).toBe(0);
    expect((await stored('BTC', from, to)).n).toBe((to - from) / MINUTE);
  });

  test('an archive that does not match its .CHECKSUM is refused: nothing of it loads, exit 1', async () => {
    archive.corrupt.add('SOLUSDT-1m-2025-08-02.zip');
    const day = Date.UTC(2025, 7, 2);
    const result = await backfill('--code', 'SOL', '--from', '2025-08-01', '--to', '2025-08-04');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /SOLUSDT-1m-2025-08-02\.zip does not match its \.CHECKSUM \(sha256 [0-9a-f]{64}, expected [0-9a-f]{64}\); refused, nothing loaded from it/,
    );
    expect(result.stdout).toMatch(/SOL\s+failed\s+loaded 2,880, skipped 0 already stored/);
    expect((await stored('SOL', day, day + DAY)).n).toBe(0);
    expect((await stored('SOL', day - DAY, day + 2 * DAY)).n).toBe(2 * 1440);

    // Fixed at the source: a rerun loads that day only.
    archive.corrupt.clear();
    const again = await backfill(
      '--code',
      'SOL',
      '--from',
      '2025-08-01',
      '--to',
      '2025-08-04',
      '--json',
    );
    expect(again.code).toBe(0);
    expect((JSON.parse(again.stdout) as Report).totals.inserted).toBe(1440);
    expect((await stored('SOL', day - DAY, day + 2 * DAY)).n).toBe(3 * 1440);
  });

  test('ms archives (to 2024) and µs archives (from 2025) are both read right; 429 is waited out', async () => {
    archive.throttles.push(1);
    const result = await backfill('--code', 'ETH', '--from', '2024-12-31', '--to', '2025-01-02');
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/waiting 1 s \(429 rate limited\)/);
    const from2024 = Date.UTC(2024, 11, 31);
    expect(await stored('ETH', from2024 - DAY, from2024 + 3 * DAY)).toEqual({
      n: 2 * 1440,
      distinct: 2 * 1440,
      first: from2024,
      last: from2024 + 2 * DAY - MINUTE,
    });
    for (const t of [from2024 + 5 * MINUTE, Date.UTC(2025, 0, 1, 0, 5)]) {
      const close = await closeAt('ETH', t);
      expect(close.stored).toBeCloseTo(close.served, 6);
    }
  });

  test('the days not archived yet come from REST, up to the last closed candle', async () => {
    // Yesterday's daily archive is not published yet; today's never is.
    archive.publishedUntil = Math.floor(Date.now() / DAY) * DAY - DAY;
    const from = END - 2 * DAY - 30 * MINUTE;
    const klinesBefore = klineRequests().length;
    const result = await backfill(
      '--code',
      'XRP',
      '--from',
      new Date(from).toISOString(),
      '--json',
    );
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    const minutes = (END - from) / MINUTE;
    expect(await stored('XRP', from - DAY, END + DAY)).toEqual({
      n: minutes,
      distinct: minutes,
      first: from,
      last: END - MINUTE,
    });
    expect(klineRequests().length).toBeGreaterThan(klinesBefore);
  });

  test('a run killed mid-download is finished by a rerun, each archive loaded once', async () => {
    archive.hang.add('ADAUSDT-1m-2025-06.zip');
    const args = ['--code', 'ADA', '--from', '2025-05-01', '--to', '2025-07-01'];
    const child = spawn(
      process.execPath,
      [PLATFORM_BIN, 'backfill', '--source', 'binance-archive', ...args],
      { env: { ...process.env, ...env(), LOG_LEVEL: 'warn', BACKFILL_HTTP_TIMEOUT_MS: '300000' } },
    );
    // May is committed with its record while June's download hangs: then the run is killed.
    await until(
      async () =>
        (
          await runtime.pool.anyFirst(sql.type(z.object({ k: z.string() }))`
          SELECT unit_key AS k FROM ingest_units WHERE unit_key LIKE '%ADAUSDT-1m-2025-05.zip'`)
        ).length === 1 && archive.requests.some((p) => p.endsWith('ADAUSDT-1m-2025-06.zip')),
      120_000,
      'May loaded and June downloading',
    );
    child.kill('SIGKILL');
    await waitForExit(child);
    const may = Date.UTC(2025, 4, 1);
    const june = Date.UTC(2025, 5, 1);
    expect((await stored('ADA', may, june + 30 * DAY)).n).toBe(31 * 1440);

    archive.hang.clear();
    const zipsBefore = archive.zipRequests().length;
    const rerun = await backfill(...args, '--json');
    expect(rerun.code).toBe(0);
    expect((JSON.parse(rerun.stdout) as Report).totals.inserted).toBe(30 * 1440);
    expect(archive.zipRequests().slice(zipsBefore)).toEqual([
      '/data/spot/monthly/klines/ADAUSDT/1m/ADAUSDT-1m-2025-06.zip',
    ]);
    expect(await stored('ADA', may, june + 30 * DAY)).toEqual({
      n: 61 * 1440,
      distinct: 61 * 1440,
      first: may,
      last: june + 30 * DAY - MINUTE,
    });
  });

  test('--prepend loads archives newest first, ending at the earliest stored candle', async () => {
    // ADA holds May and June 2025 (the test above); two days before them come newest first.
    const zipsBefore = archive.zipRequests().length;
    const result = await backfill('--code', 'ADA', '--prepend', '--days', '2', '--json');
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    expect((JSON.parse(result.stdout) as Report).totals.inserted).toBe(2 * 1440);
    expect(archive.zipRequests().slice(zipsBefore).sort()).toEqual([
      '/data/spot/daily/klines/ADAUSDT/1m/ADAUSDT-1m-2025-04-29.zip',
      '/data/spot/daily/klines/ADAUSDT/1m/ADAUSDT-1m-2025-04-30.zip',
    ]);
    // Committed newest first (each archive is its own transaction).
    const loaded = await runtime.pool.anyFirst(sql.type(z.object({ k: z.string() }))`
      SELECT unit_key AS k FROM ingest_units WHERE unit_key LIKE '%ADAUSDT-1m-2025-04-%'
       ORDER BY completed_at`);
    expect(loaded.map((k) => k.slice(-14))).toEqual(['2025-04-30.zip', '2025-04-29.zip']);
    const may = Date.UTC(2025, 4, 1);
    expect((await stored('ADA', may - 2 * DAY, may)).n).toBe(2 * 1440);
  });

  test('usage errors exit 2 before touching anything', async () => {
    const enqueue = await backfill('--code', 'BTC', '--days', '3', '--enqueue');
    expect(enqueue.code).toBe(2);
    expect(enqueue.stderr).toMatch(/does not take --enqueue/);
    const weekly = await backfill('--code', 'BTC', '--days', '30', '--interval', '1w');
    expect(weekly.code).toBe(2);
    expect(weekly.stderr).toMatch(/at most 1d/);
  });
});
