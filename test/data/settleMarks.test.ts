import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import { dedicatedConnection } from '../../src/data/ingest/connection.ts';
import { BinanceKlineClient } from '../../src/data/ingest/exchange/binanceKlines.ts';
import {
  importExchangeSlice,
  planSlices,
} from '../../src/data/ingest/exchange/exchangeBackfill.ts';
import { healCurrency } from '../../src/data/ingest/heal/heal.ts';
import { importFile } from '../../src/data/ingest/importFile.ts';
import { loadSimulatedHistory } from '../../src/data/ingest/simulated/simulatedHistory.ts';
import { createSimulatedSource } from '../../src/data/market/sources/simulated.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { slotContext } from '../../src/worker/recurring.ts';
import { runHarvestCycle } from '../../workers/harvestPrices.ts';
import { FakeBinance } from '../ingest/fakeBinance.ts';
import { getJson, serve } from '../support/http.ts';
import { insertCandles, writeMinutePricesCsv } from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

// The rollups recompute only ranges marked in price_invalidations; a raw price written behind
// the settle window without a mark would stay invisible in history answers (rollups and cached
// runs) for good. Every way a price gets into price_observations is exercised here: a
// price is written into an hour that is settled, rolled up and cached, and it must be
// marked right after the write and shown by the history route after one refresh.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const BASE_PRICE = 100;

let runtime: TestRuntime;
let server: RunningServer;
let readToken: string;
let writeToken: string;
let fake: FakeBinance;
let dir: string;

/** Each write path gets its own currency and its own three hours, all long settled. */
const firstHour = Math.floor((Date.now() - 30 * HOUR) / HOUR) * HOUR;
const PATHS = ['file', 'bulk', 'backfill', 'heal', 'simulated', 'harvest'] as const;
type WritePath = (typeof PATHS)[number];
const CODES: Record<WritePath, string> = {
  file: 'ADA',
  bulk: 'XRP',
  backfill: 'ETH',
  heal: 'SOL',
  simulated: 'DOGE',
  harvest: 'BTC',
};
const windowOf = (path: WritePath) => {
  const start = firstHour + PATHS.indexOf(path) * 4 * HOUR;
  // The price written lands at the start of the window's second hour, which the base rows leave
  // empty: it becomes that hour's open, in the candles and in the history route alike.
  return { start, end: start + 3 * HOUR, written: start + HOUR };
};

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  readToken = (await createToken(runtime.pool, 'reader', ['read'])).token;
  writeToken = (await createToken(runtime.pool, 'writer', ['write'])).token;
  server = await serve(createDataService(runtime).app);
  fake = await new FakeBinance().start();
  dir = await mkdtemp(join(tmpdir(), 'settle-marks-'));
  for (const path of PATHS) {
    const { start, end, written } = windowOf(path);
    const minutes = Array.from({ length: (end - start) / MINUTE }, (_, i) => start + i * MINUTE);
    await insertCandles(
      runtime.pool,
      minutes
        .filter((t) => t !== written)
        .map((t) => ({ code: CODES[path], time: new Date(t), open: BASE_PRICE })),
    );
  }
  await refresh();
}, 180_000);

afterAll(async () => {
  await fake.stop();
  await server.close();
  await runtime.dispose();
  await rm(dir, { recursive: true, force: true });
});

const refresh = () =>
  refreshRollups(runtime.pool, { settleSeconds: runtime.config.ROLLUP_SETTLE_SECONDS });

/** The history route's value for the hour starting at `at` (its open). */
async function historyValue(code: string, at: number): Promise<number | undefined> {
  const { status, body } = await getJson(
    `${server.url}/data/currency/history/${code}?hours=40&intervalSeconds=3600`,
    readToken,
  );
  expect(status).toBe(200);
  const points = z.array(z.object({ timestamp: z.string(), value: z.number() })).parse(body);
  return points.find((p) => Date.parse(p.timestamp) === at)?.value;
}

const storedOpen = (code: string, at: number) =>
  runtime.pool.oneFirst(sql.type(z.object({ open: z.number() }))`
    SELECT open FROM price_observations
    WHERE currency_code = ${code} AND time = ${sql.timestamp(new Date(at))}`);

const marksCovering = (code: string, at: number) =>
  runtime.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM price_invalidations
    WHERE currency_code = ${code} AND range_start <= ${sql.timestamp(new Date(at))}
      AND range_end >= ${sql.timestamp(new Date(at))}`);

const binance = () =>
  new BinanceKlineClient({
    baseUrl: fake.url,
    timeoutMs: 10_000,
    backoffMs: 10,
    sleep: async () => {},
  });

/** Writes one price at `at` (and, for some paths, more around it) the way the path does. */
const WRITERS: Record<WritePath, (code: string, at: number, end: number) => Promise<void>> = {
  async file(code, at) {
    const file = await writeMinutePricesCsv(join(dir, `${code}.csv`), code, 1, {
      startMs: at,
      price: () => '500',
    });
    const result = await importFile(dedicatedConnection(runtime.config.DATABASE_URL), file);
    expect(result).toMatchObject({ status: 'loaded', inserted: 1 });
  },
  async bulk(code, at) {
    const { status, body } = await getJson(`${server.url}/data/prices/bulk`, writeToken, {
      method: 'POST',
      body: JSON.stringify([{ code, time: new Date(at).toISOString(), price: 500 }]),
      headers: { 'content-type': 'application/json' },
    });
    expect({ status, body }).toMatchObject({ status: 200, body: { inserted: 1 } });
  },
  async backfill(code, at) {
    const [slice, ...rest] = planSlices({
      code,
      symbol: `${code}USDT`,
      interval: '1m',
      from: new Date(at),
      to: new Date(at + MINUTE),
    });
    expect(rest).toEqual([]);
    const connect = dedicatedConnection(runtime.config.DATABASE_URL);
    const result = await importExchangeSlice(connect, binance(), slice!);
    expect(result).toMatchObject({ status: 'loaded', inserted: 1 });
  },
  async heal(code, _at, end) {
    const connect = dedicatedConnection(runtime.config.DATABASE_URL);
    const result = await healCurrency(connect, [binance()], code, { lookbackHours: 3, now: end });
    expect(result).toMatchObject({ missing: 1, filled: 1 });
  },
  async simulated(code, _at, end) {
    const connect = dedicatedConnection(runtime.config.DATABASE_URL);
    const [day, ...rest] = await loadSimulatedHistory(connect, {
      seed: 'settle-marks',
      untilMs: end,
      days: 1,
      codes: [code],
    });
    expect(rest).toEqual([]);
    expect(day).toMatchObject({ status: 'loaded' });
  },
  async harvest(code, at) {
    // A slot long past but not yet stale: a worker configured to harvest twice a day.
    const slot = slotContext(new Date(at), 12 * HOUR);
    const sources = [createSimulatedSource('settle-marks')];
    const result = await runHarvestCycle({ runtime, sources }, slot);
    expect(result.outcome).toBe('written');
    expect(await storedOpen(code, at)).toBeGreaterThan(0);
  },
};

describe('a price written behind the settle window', () => {
  test.each(PATHS)(
    'by %s is marked and shown after one refresh',
    async (path) => {
      const code = CODES[path];
      const { end, written } = windowOf(path);
      // Settled, rolled up and cached: the hour opens at the base price.
      expect(await historyValue(code, written)).toBe(BASE_PRICE);

      await WRITERS[path](code, written, end);
      expect(await marksCovering(code, written)).toBeGreaterThan(0);
      const price = await storedOpen(code, written);
      expect(price).not.toBe(BASE_PRICE);

      const result = await refresh();
      expect(result).toMatchObject({ caughtUp: true, skipped: false });
      expect(await historyValue(code, written)).toBe(price);
    },
    120_000,
  );
});

// The writers above are all there are: a new statement writing price_observations elsewhere
// would be a write path this file does not cover, and whose marks nobody checks.
describe('write paths', () => {
  // The loader's merge (mergeStage.ts) and the harvest; the loader's COPY is checked below.
  const WRITER_MODULES = ['src/data/ingest/mergeStage.ts', 'src/data/prices/recordHarvest.ts'];
  const WRITE =
    /\b(INSERT\s+INTO|COPY|UPDATE|DELETE\s+FROM|MERGE\s+INTO|TRUNCATE)\s+(TABLE\s+)?price_observations\b/i;

  async function sources(root: string): Promise<string[]> {
    const entries = await readdir(root, { withFileTypes: true, recursive: true });
    return entries
      .filter((e) => e.isFile() && /\.(ts|mjs|js|sql)$/.test(e.name))
      .map((e) => relative(process.cwd(), join(e.parentPath, e.name)));
  }

  test('only the loader and the harvest write raw prices, and both mark in the write', async () => {
    // The code that runs in production: the services, the jobs, the command line and its scripts,
    // and the migrations (a function or trigger defined there would write at run time too).
    const roots = ['src', 'workers', 'bin', 'scripts', 'sql'];
    const files = (await Promise.all(roots.map(sources))).flat();
    const writers: string[] = [];
    for (const file of files) {
      if (WRITE.test(await readFile(file, 'utf8'))) writers.push(file);
    }
    expect(writers.sort()).toEqual(WRITER_MODULES);
    // The loader's COPY (copyPass.ts) names its target at run time; the loader marks what the
    // COPY and the merge wrote, in their transaction.
    const copy = await readFile('src/data/ingest/copyPass.ts', 'utf8');
    expect(copy).toMatch(/COPY \$\{target\}/);
    const loader = await readFile('src/data/ingest/loader.ts', 'utf8');
    expect(loader).toMatch(/markTouchedRangesOnClient\(client, ranges\)/);
    const harvest = await readFile('src/data/prices/recordHarvest.ts', 'utf8');
    expect(harvest).toMatch(/INSERT INTO price_invalidations/);
  });
});
