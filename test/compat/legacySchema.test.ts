import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { runCli } from '../support/cli.ts';
import { refreshLegacy } from '../../src/data/legacy/refresh.ts';
import { markTouchedRanges } from '../../src/data/prices/invalidations.ts';
import { createModeRuntime } from '../support/rollupModes.ts';
import { insertCandles } from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

// The analysis service's own SQL (shared/spec/original-clients.md, section 1), sent unchanged
// through a real pg connection as the read-only legacy role with search_path=legacy.

const MIN = 60_000;
let runtime: TestRuntime;
let role: string;
let client: pg.Client;
// Whole minutes, well in the past, so every minute here is complete.
const T0 = Math.floor((Date.now() - 6 * 3_600_000) / MIN) * MIN;
const at = (minute: number, second = 0) => new Date(T0 + minute * MIN + second * 1000);

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  await runtime.pool.query(sql.unsafe`
    INSERT INTO currencies (code, name) VALUES ('1INCH', '1inch') ON CONFLICT DO NOTHING
  `);
  await insertCandles(runtime.pool, [
    // Two observations in minute 0: the last one is the minute's price.
    { code: 'BTC', time: at(0, 5), open: 50_000 },
    { code: 'BTC', time: at(0, 50), open: 50_100 },
    { code: 'ETH', time: at(0, 10), open: 3000 },
    // Minute 1 has no price at all; minute 2 only BTC.
    { code: 'BTC', time: at(2, 0), open: 50_200 },
    { code: 'ETH', time: at(3, 0), open: 3010.5 },
    { code: 'BTC', time: at(3, 0), open: 50_300 },
    { code: '1INCH', time: at(3, 0), open: 0.4 },
  ]);
  await refreshLegacy(runtime.pool, { now: at(4), budgetMs: 60_000 });

  role = `legacy_test_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  const created = await runCli(['legacy-role', 'create', role, '--password', password, '--json'], {
    DATABASE_URL: runtime.config.DATABASE_URL,
  });
  expect(created).toMatchObject({ code: 0 });
  expect(JSON.parse(created.stdout)).toEqual({ name: role, password });
  const url = new URL(runtime.config.DATABASE_URL);
  url.username = role;
  url.password = password;
  url.searchParams.set('options', '-c search_path=legacy');
  client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
});

afterAll(async () => {
  await client?.end();
  const dropped = await runCli(['legacy-role', 'drop', role], {
    DATABASE_URL: runtime.config.DATABASE_URL,
  });
  await runtime.dispose();
  expect(dropped).toMatchObject({ code: 0, stdout: `dropped role ${role}\n` });
});

describe('the analysis service’s SQL as the legacy role', () => {
  test('current price: SELECT * FROM currencies WHERE currency_code = …', async () => {
    await runtime.pool.query(sql.unsafe`
      INSERT INTO currency_snapshots (currency_code, price, observed_at, source)
      VALUES ('BTC', 50300, ${sql.timestamp(at(3))}, 'test')
      ON CONFLICT (currency_code) DO UPDATE SET price = EXCLUDED.price, observed_at = EXCLUDED.observed_at
    `);
    const { rows } = await client.query("SELECT * FROM currencies WHERE currency_code = 'BTC'");
    expect(rows).toHaveLength(1);
    expect(rows[0].currency_code).toBe('BTC');
    expect(rows[0].currency_name).toBe('Bitcoin');
    expect(Number(rows[0].currency_value)).toBe(50_300);
    expect(rows[0].last_updated).toEqual(at(3));
  });

  test('history: one wide row per minute, newest first, NULL where no price', async () => {
    const { rows, fields } = await client.query(
      'SELECT last_updated, btc_price, eth_price FROM market_snapshots ORDER BY last_updated DESC LIMIT 40000',
    );
    expect(fields.map((f) => f.name)).toEqual(['last_updated', 'btc_price', 'eth_price']);
    expect(fields[1]!.dataTypeID).toBe(1700); // NUMERIC
    expect(rows.map((r) => [r.last_updated.getTime(), r.btc_price, r.eth_price])).toEqual([
      [at(3).getTime(), '50300', '3010.5'],
      [at(2).getTime(), '50200', null],
      [at(1).getTime(), null, null],
      [at(0).getTime(), '50100', '3000'],
    ]);
  });

  test('ids are dense and increase with time: the spaced query lands on rows', async () => {
    const { rows } = await client.query(`
      WITH bounds AS (
        SELECT MIN(id) AS min_id, MAX(id) AS max_id FROM market_snapshots
      ), spaced AS (
        SELECT generate_series(max_id, min_id, -2) AS id FROM bounds
      )
      SELECT id, last_updated, btc_price, eth_price
      FROM spaced JOIN market_snapshots USING (id)
      ORDER BY last_updated DESC
    `);
    expect(rows.map((r) => r.last_updated.getTime())).toEqual([at(3).getTime(), at(1).getTime()]);
    const ids = (await client.query('SELECT id FROM market_snapshots ORDER BY id')).rows.map((r) =>
      Number(r.id),
    );
    expect(ids).toEqual([ids[0], ids[0]! + 1, ids[0]! + 2, ids[0]! + 3]);
  });

  test('predictions: SELECT currency_code, AVG(percent_difference) … GROUP BY', async () => {
    await runtime.pool.query(sql.unsafe`
      INSERT INTO predictions (currency_code, predicted_price, actual_price, price_difference,
                               percent_difference, model_type, num_rows, last_updated)
      VALUES ('BTC', 1, 1, 0, 2, 'lstm', 10, now()), ('BTC', 1, 1, 0, 4, 'lstm', 10, now())
    `);
    const { rows } = await client.query(
      'SELECT currency_code, AVG(percent_difference) FROM predictions GROUP BY currency_code ORDER BY currency_code',
    );
    expect(rows).toEqual([{ currency_code: 'BTC', avg: 3 }]);
  });

  test('one column per currency whose code is an identifier (no 1inch_price)', async () => {
    const { rows } = await client.query(`
      SELECT column_name FROM information_schema.columns
      WHERE table_schema = 'legacy' AND table_name = 'market_snapshots'
    `);
    const names = rows.map((r) => r.column_name as string);
    expect(names).toEqual(expect.arrayContaining(['id', 'last_updated', 'btc_price', 'eth_price']));
    expect(names.filter((n) => n.startsWith('1'))).toEqual([]);
  });

  test('read-only, and nothing outside the legacy schema', async () => {
    const refused = async (text: string) => {
      await expect(client.query(text)).rejects.toThrow(/permission denied/);
    };
    await refused('SELECT * FROM public.price_observations LIMIT 1');
    await refused('SELECT * FROM public.currencies LIMIT 1');
    await refused('SELECT * FROM legacy.stale_ranges');
    await refused("INSERT INTO market_snapshots (id, last_updated) VALUES (1, '2000-01-01')");
    await refused('DELETE FROM market_snapshots');
    await refused('CREATE TABLE legacy.mine (x int)');
    const attributes = await runtime.pool.one(sql.unsafe`
      SELECT rolsuper, rolcreaterole, rolcreatedb, rolconfig FROM pg_roles WHERE rolname = ${role}
    `);
    expect(attributes).toEqual({
      rolsuper: false,
      rolcreaterole: false,
      rolcreatedb: false,
      rolconfig: ['search_path=legacy'],
    });
  });

  test('the CLI refuses a second role of the same name, and to drop a role it did not make', async () => {
    const env = { DATABASE_URL: runtime.config.DATABASE_URL };
    const again = await runCli(['legacy-role', 'create', role], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already exists/);
    const platformUser = await runtime.pool.oneFirst(sql.type(z.object({ u: z.string() }))`
      SELECT current_user AS u
    `);
    const other = await runCli(['legacy-role', 'drop', platformUser], env);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/not a legacy role/);
    expect((await runCli(['legacy-role', 'create', 'Bad-Name'], env)).code).toBe(2);
  });
});

describe('refresh_legacy follows the history', () => {
  test('backfilled history before the first row: rows reach back densely', async () => {
    await runtime.pool.transaction(async (tx) => {
      await insertCandles(tx, [
        { code: 'BTC', time: at(-3), open: 49_000 },
        { code: 'BTC', time: at(2, 30), open: 50_250 },
      ]);
      await markTouchedRanges(tx, [{ code: 'BTC', from: at(-3), to: at(2, 30) }]);
    });
    await refreshLegacy(runtime.pool, { now: at(4), budgetMs: 60_000 });
    const { rows } = await client.query(
      'SELECT id, last_updated, btc_price FROM market_snapshots ORDER BY last_updated',
    );
    expect(rows.map((r) => [r.last_updated.getTime(), r.btc_price])).toEqual([
      [at(-3).getTime(), '49000'],
      [at(-2).getTime(), null],
      [at(-1).getTime(), null],
      [at(0).getTime(), '50100'],
      [at(1).getTime(), null],
      [at(2).getTime(), '50250'],
      [at(3).getTime(), '50300'],
    ]);
    const ids = rows.map((r) => Number(r.id));
    expect(ids.at(-1)! - ids[0]!).toBe(ids.length - 1);
  });

  test('harvested minutes come in from the last row on, which is redone', async () => {
    await insertCandles(runtime.pool, [
      { code: 'ETH', time: at(3, 59), open: 3020 },
      { code: 'ETH', time: at(5, 0), open: 3030 },
    ]);
    const result = await refreshLegacy(runtime.pool, { now: at(6, 1) });
    expect(result.caughtUp).toBe(true);
    const { rows } = await client.query(
      'SELECT last_updated, eth_price FROM market_snapshots ORDER BY last_updated DESC LIMIT 3',
    );
    expect(rows.map((r) => [r.last_updated.getTime(), r.eth_price])).toEqual([
      [at(5).getTime(), '3030'],
      [at(4).getTime(), null],
      [at(3).getTime(), '3020'],
    ]);
  });

  test('a new currency gets its column, filled over its existing history', async () => {
    await runtime.pool.query(sql.unsafe`INSERT INTO currencies (code, name) VALUES ('ZZT', 'Zed')`);
    await insertCandles(runtime.pool, [{ code: 'ZZT', time: at(2, 10), open: 7 }]);
    const result = await refreshLegacy(runtime.pool, { now: at(6, 1), budgetMs: 60_000 });
    expect(result.columnsAdded).toEqual(['zzt_price']);
    const { rows } = await client.query(
      'SELECT last_updated, zzt_price FROM market_snapshots WHERE zzt_price IS NOT NULL',
    );
    expect(rows).toEqual([{ last_updated: at(2), zzt_price: '7' }]);
  });
});

test('the migration and the refresh run on the Timescale edition (PGlite, continuous aggregates)', async () => {
  const lite = await createModeRuntime('continuous');
  try {
    await generateCurrencies({ pool: lite.pool, logger: lite.logger, loadFromExchange: false });
    await lite.pool.transaction(async (tx) => {
      await insertCandles(tx, [
        { code: 'BTC', time: at(0), open: 1 },
        { code: 'BTC', time: at(2), open: 3 },
      ]);
      await markTouchedRanges(tx, [{ code: 'BTC', from: at(0), to: at(2) }]);
    });
    await refreshLegacy(lite.pool, { now: at(3), budgetMs: 60_000 });
    const rows = await lite.pool.any(sql.type(
      z.object({ minute: z.number(), btc: z.string().nullable() }),
    )`
      SELECT (extract(epoch FROM last_updated) * 1000)::float8 AS minute, btc_price::text AS btc
      FROM legacy.market_snapshots ORDER BY id
    `);
    expect(rows.map((r) => [r.minute, r.btc])).toEqual([
      [at(0).getTime(), '1'],
      [at(1).getTime(), null],
      [at(2).getTime(), '3'],
    ]);
    const current = await lite.pool.any(
      sql.unsafe`SELECT * FROM legacy.currencies WHERE currency_code = 'BTC'`,
    );
    expect(current).toHaveLength(1);
  } finally {
    await lite.dispose();
  }
});
