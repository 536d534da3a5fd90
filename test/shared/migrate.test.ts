import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { migrate, migrationNames } from '../../src/shared/db/migrate.ts';
import { databaseUrl, dropDatabase, TEST_DB_PREFIX, withAdmin } from '../support/database.ts';

// An empty database, not a clone of the template: this is what a fresh deployment meets.
const name = `${TEST_DB_PREFIX}empty_${process.pid}`;
const url = databaseUrl(name);

beforeAll(async () => {
  await withAdmin((client) => client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`));
});

afterAll(async () => {
  await withAdmin((client) => dropDatabase(client, name));
});

async function query<T extends pg.QueryResultRow>(text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

test('migrations apply to an empty database, in order, then have nothing left to do', async () => {
  const first = await migrate(url);
  expect(first.applied).toEqual(migrationNames());
  const second = await migrate(url);
  expect(second.applied).toEqual([]);
});

test('the job queue schema is recorded with its version; another version migrates it again', async () => {
  const entry = createRequire(import.meta.url).resolve('graphile-worker');
  const { version } = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8'));
  const recorded = () =>
    query<{ name: string; version: string }>('SELECT * FROM schema_components');
  expect(await recorded()).toEqual([{ name: 'graphile-worker', version }]);
  // As after an upgrade of graphile-worker: the runners run again (nothing of sql/ is pending).
  await query(`UPDATE schema_components SET version = '0.0.1'`);
  expect((await migrate(url)).applied).toEqual([]);
  expect(await recorded()).toEqual([{ name: 'graphile-worker', version }]);
});

test('concurrent starters apply each migration exactly once', async () => {
  const results = await Promise.all([migrate(url), migrate(url), migrate(url)]);
  expect(results.flatMap((r) => r.applied)).toEqual([]);
  const rows = await query<{ name: string; n: string }>(
    'SELECT name, count(*) AS n FROM schema_migrations GROUP BY name HAVING count(*) > 1',
  );
  expect(rows).toEqual([]);
});

test('price observations and news sentiment are hypertables with the chosen chunk intervals', async () => {
  const rows = await query<{ hypertable_name: string; time_interval: string }>(`
    SELECT hypertable_name, time_interval::text FROM timescaledb_information.dimensions ORDER BY 1
  `);
  expect(rows).toEqual(
    expect.arrayContaining([
      { hypertable_name: 'price_observations', time_interval: '7 days' },
      { hypertable_name: 'news_sentiment', time_interval: '30 days' },
    ]),
  );
});

test('the job queue schema is installed with the migrations', async () => {
  const rows = await query<{ ok: boolean }>(
    `SELECT to_regproc('graphile_worker.add_job') IS NOT NULL AS ok`,
  );
  expect(rows[0]?.ok).toBe(true);
});

test('stored prices are finite: NaN and Infinity are refused by the database itself', async () => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const insert = (open: string, volume = '1') =>
      client.query(
        `INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
         VALUES ('BTC', now(), $1::float8, $1::float8, 1, 1, $2::float8, 'test')`,
        [open, volume],
      );
    for (const [open, volume] of [
      ['Infinity', '1'],
      ['NaN', '1'],
      ['2', 'Infinity'],
      ['2', 'NaN'],
    ]) {
      await expect(insert(open!, volume)).rejects.toMatchObject({ code: '23514' });
    }
    await insert('2');
    await client.query(
      `INSERT INTO currencies (code, name) VALUES ('BTC', 'Bitcoin') ON CONFLICT DO NOTHING`,
    );
    await expect(
      client.query(
        `INSERT INTO currency_snapshots (currency_code, price, observed_at, source)
         VALUES ('BTC', 'Infinity', now(), 'test')`,
      ),
    ).rejects.toMatchObject({ code: '23514' });
  } finally {
    await client.end();
  }
});
