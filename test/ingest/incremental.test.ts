import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { spawn } from 'node:child_process';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { PLATFORM_BIN, runCli, spawnCli, waitForExit } from '../support/cli.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { until } from '../support/wait.ts';
import { FakeBinance } from './fakeBinance.ts';
import { FakeCoinbase, FakeKraken } from './fakeHistory.ts';
import { MINUTE } from './fixtures.ts';

// `platform backfill --source … --all --since-last | --days | --prepend`, run as a user would
// against local fake exchanges. The fakes' history ends at END (exclusive), a minute an hour ago,
// so what a run should load is known exactly although the command measures "now" itself.

jest.setTimeout(240_000);
const HOUR = 60 * MINUTE;
const END = Math.floor(Date.now() / MINUTE) * MINUTE - HOUR;

let runtime: TestRuntime;
let binance: FakeBinance;
let kraken: FakeKraken;
let coinbase: FakeCoinbase;

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  binance = await new FakeBinance().start();
  kraken = await new FakeKraken().start();
  coinbase = await new FakeCoinbase().start();
  coinbase.until = END - 1;
  binance.until = END - 1;
});

afterAll(async () => {
  await binance.stop();
  await kraken.stop();
  await coinbase.stop();
  await runtime.dispose();
});

const env = () => ({
  DATABASE_URL: runtime.config.DATABASE_URL,
  BINANCE_API_URL: binance.url,
  KRAKEN_API_URL: kraken.url,
  COINBASE_EXCHANGE_API_URL: coinbase.url,
});

const backfill = (...args: string[]) => runCli(['backfill', ...args], env());

interface Report {
  totals: { inserted: number; duplicates: number; rejected: number };
  currencies: Array<{ code: string; status: string; inserted: number; duplicates: number }>;
}

async function backfillJson(...args: string[]): Promise<Report> {
  const result = await backfill(...args, '--json');
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(result.stdout) as Report;
}

const stored = (code: string) =>
  runtime.pool.one(sql.type(
    z.object({ n: z.number(), first: z.number().nullable(), last: z.number().nullable() }),
  )`
    SELECT count(*)::int AS n,
           (extract(epoch FROM min(time)) * 1000)::float8 AS first,
           (extract(epoch FROM max(time)) * 1000)::float8 AS last
      FROM price_observations WHERE currency_code = ${code}`);

/** One harvested observation a minute over [from, to). */
async function observe(code: string, from: number, to: number) {
  await runtime.pool.query(sql.unsafe`
    INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
    SELECT ${code}, m, 1, 1, 1, 1, 0, 'harvest'
      FROM generate_series(to_timestamp(${from / 1000}), to_timestamp(${to / 1000 - 60}),
                           interval '1 minute') AS m`);
}

const klineRequests = () => binance.requests.filter((u) => u.pathname === '/api/v3/klines');

describe('platform backfill, incremental', () => {
  test('--all --since-last continues from each last candle, --days for those with none; a rerun loads nothing', async () => {
    binance.listed = new Set(['BTC', 'ETH', 'SOL']);
    binance.listedFrom = END - 10 * HOUR;
    await observe('BTC', END - 6 * HOUR, END - 3 * HOUR);
    await observe('ETH', END - 5 * HOUR, END - 4 * HOUR);

    const first = await backfill('--source', 'binance', '--all', '--since-last', '--days', '1');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/backfill binance: 3 currencies; loaded 1,020 rows/);
    expect(first.stdout).toMatch(/BTC\s+loaded\s+loaded 180, skipped 0 already stored/);
    expect(first.stdout).toMatch(/SOL\s+loaded\s+loaded 600, skipped 0/);
    // Only currencies the exchange lists are asked for.
    expect(
      klineRequests().every((u) => /^(BTC|ETH|SOL)USDT$/.test(u.searchParams.get('symbol') ?? '')),
    ).toBe(true);
    expect(await stored('BTC')).toEqual({ n: 360, first: END - 6 * HOUR, last: END - MINUTE });
    expect(await stored('ETH')).toEqual({ n: 300, first: END - 5 * HOUR, last: END - MINUTE });
    expect(await stored('SOL')).toEqual({ n: 600, first: END - 10 * HOUR, last: END - MINUTE });

    const asked = klineRequests().length;
    const again = await backfillJson('--source', 'binance', '--all', '--since-last', '--days', '1');
    expect(again.totals).toMatchObject({ inserted: 0, duplicates: 0, rejected: 0 });
    // Each currency asks only for the minutes after its last candle (one short request each).
    expect(klineRequests().length - asked).toBeLessThanOrEqual(3 * 2);
    for (const q of klineRequests().slice(asked))
      expect(Number(q.searchParams.get('startTime'))).toBeGreaterThanOrEqual(END);
  });

  test('--since-last without --days leaves currencies with no candle alone', async () => {
    binance.listed = new Set(['BTC', 'XRP']);
    const report = await backfillJson('--source', 'binance', '--all', '--since-last');
    const xrp = report.currencies.find((c) => c.code === 'XRP');
    expect(xrp?.status).toBe('skipped');
    expect((await stored('XRP')).n).toBe(0);
  });

  test('--prepend extends history backwards from the earliest stored candle', async () => {
    binance.listed = new Set(['BTC', 'ETH', 'SOL']);
    binance.listedFrom = END - 12 * HOUR;
    const report = await backfillJson('--source', 'binance', '--all', '--prepend', '--days', '1');
    expect(report.totals).toMatchObject({ inserted: 360 + 420 + 120, duplicates: 0, rejected: 0 });
    for (const code of ['BTC', 'ETH', 'SOL'])
      expect(await stored(code)).toEqual({ n: 720, first: END - 12 * HOUR, last: END - MINUTE });
  });

  test('a run killed with SIGKILL mid-way is finished by a rerun, each row loaded once', async () => {
    const codes = ['XRP', 'ADA', 'LTC'];
    binance.listed = new Set(codes);
    binance.listedFrom = END - 4 * 24 * HOUR;
    for (const code of codes)
      await observe(code, END - 4 * 24 * HOUR, END - 4 * 24 * HOUR + MINUTE);
    // The first requests answer at once, then one hangs until the run is killed.
    const before = klineRequests().length;
    binance.faults.push(...Array.from({ length: 8 }, () => ({ weight: 2 })), { hangMs: 600_000 });
    const child = spawn(
      process.execPath,
      [PLATFORM_BIN, 'backfill', '--source', 'binance', '--all', '--since-last'],
      { env: { ...process.env, ...env(), LOG_LEVEL: 'warn', BACKFILL_HTTP_TIMEOUT_MS: '300000' } },
    );
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    await until(
      async () => klineRequests().length - before >= 9,
      120_000,
      'the hanging request',
    ).catch((error: Error) => {
      throw new Error(`${error.message} (${klineRequests().length - before} asked)\n${output}`);
    });
    const partly = (await Promise.all(codes.map(stored))).reduce((s, r) => s + r.n, 0);
    expect(partly).toBeGreaterThan(codes.length);
    child.kill('SIGKILL');
    await waitForExit(child);
    binance.faults.length = 0;
    const loadedBefore = partly - codes.length;

    const rerun = await backfillJson('--source', 'binance', '--all', '--since-last');
    expect(rerun.totals.duplicates).toBe(0);
    for (const code of codes)
      expect(await stored(code)).toEqual({
        n: 4 * 1440,
        first: END - 4 * 24 * HOUR,
        last: END - MINUTE,
      });
    expect(loadedBefore + rerun.totals.inserted).toBe(codes.length * (4 * 1440 - 1));
  });

  test('Kraken: --days is cut to the 720 candles it keeps; --help says so', async () => {
    kraken.listed = new Set(['DOGE']);
    kraken.until = Date.now();
    const result = await backfill('--source', 'kraken', '--all', '--days', '3');
    expect(result.code).toBe(0);
    const doge = await stored('DOGE');
    // Kraken's window moves with the clock: 720 candles, one fewer if a minute turned meanwhile.
    expect(doge.n).toBeGreaterThanOrEqual(718);
    expect(doge.n).toBeLessThanOrEqual(720);
    expect(
      kraken.requests.filter((u) => u.pathname === '/0/public/OHLC').length,
    ).toBeLessThanOrEqual(2);

    const help = await runCli(['backfill', '--help']);
    expect(help.stdout).toMatch(/last 720 candles/);
    expect(help.stdout).toMatch(/--since-last/);
    expect(help.stdout).toMatch(/Exit codes:\n\s+0 /);
  });

  test('Coinbase on a terminal: one progress bar for the run, then a line per currency', async () => {
    coinbase.listed = new Set(['LINK', 'DOT']);
    coinbase.listedFrom = END - 10 * HOUR;
    const { child, output } = await spawnCli(
      ['backfill', '--source', 'coinbase', '--all', '--days', '1'],
      env(),
      /LINK .*\n.*DOT .*\n|DOT .*\n.*LINK .*\n/,
      180_000,
      { terminal: true },
    );
    expect(await waitForExit(child)).toBe(0);
    expect(output()).toMatch(/\d+% \| [\d,]+ rows/);
    expect(output()).toMatch(/backfill coinbase: 2 currencies; loaded 1,200 rows/);
    for (const code of ['LINK', 'DOT'])
      expect(await stored(code)).toEqual({ n: 600, first: END - 10 * HOUR, last: END - MINUTE });
    // 300 candles a call: 10 hours are at least two calls per currency, never a wider one.
    const calls = coinbase.requests.filter((u) => u.pathname.endsWith('/candles'));
    expect(calls.length).toBeGreaterThanOrEqual(4);
  });

  test('contradictory options are usage errors (exit 2) that touch nothing', async () => {
    for (const args of [
      ['--source', 'binance', '--all', '--prepend'],
      ['--source', 'binance', '--all', '--code', 'BTC', '--days', '1'],
      ['--source', 'binance', '--all', '--since-last', '--prepend', '--days', '1'],
      ['--all', '--days', '1'],
      ['--source', 'binance', '--days', '1'],
      ['--source', 'binance', '--all', '--days', '-3'],
    ]) {
      const result = await backfill(...args);
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(result.stderr).toMatch(/error:/);
    }
  });
});
