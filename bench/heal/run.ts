// bench:heal — healing a 6-hour outage for every currency of the list (136) from a local fake
// Binance that answers in the real API's shape (klines pages of at most 1,000, the used-weight
// header): a throw-away database gets 72 hours of one-minute observations per currency with a
// 6-hour hole, then `platform heal --json` (the real command, Node start-up included) runs one
// pass. Prints its seconds beside the 60 s goal and the load average; then SQL checks that every
// missing minute was filled (from the exchange, once) and that no open minute is left.
import { execFile } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { shippedCurrencies, upsertCurrencies } from '../../src/data/currencies/catalog.ts';
import { createDatabasePool } from '../../src/shared/db/pool.ts';
import { FakeBinance } from '../../test/ingest/fakeBinance.ts';
import { benchDatabaseUrl, dropBenchDatabase, recreateDatabase } from '../shared/databases.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const GOAL_SECONDS = 60;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const HISTORY_HOURS = 70;
const OUTAGE_HOURS = 6;
const DB = 'bench_heal';
const dbUrl = benchDatabaseUrl(DB);

async function query<R extends pg.QueryResultRow>(url: string, text: string, values?: unknown[]) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** 70 hours of one-minute observations per currency, without the 6 hours of the outage. */
async function prepare(now: number, outage: { from: number; to: number }) {
  await recreateDatabase(DB);
  const pool = await createDatabasePool(dbUrl, { maxPoolSize: 1 });
  try {
    await upsertCurrencies(
      pool,
      shippedCurrencies().map((c, i) => ({ ...c, rank: i + 1 })),
    );
  } finally {
    await pool.end();
  }
  const first = Math.floor(now / MINUTE) * MINUTE - HISTORY_HOURS * HOUR;
  await query(
    dbUrl,
    `INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
     SELECT c.code, m, 1, 1, 1, 1, 0, 'harvest'
       FROM currencies c,
            generate_series(to_timestamp($1 / 1000.0), to_timestamp($2 / 1000.0), interval '1 minute') AS m
      WHERE m < to_timestamp($3 / 1000.0) OR m >= to_timestamp($4 / 1000.0)`,
    [first, now, outage.from, outage.to],
  );
  await query(dbUrl, 'ANALYZE price_observations');
}

async function main() {
  const now = Date.now();
  const outage = {
    from: Math.floor(now / MINUTE) * MINUTE - 10 * HOUR,
    to: Math.floor(now / MINUTE) * MINUTE - (10 - OUTAGE_HOURS) * HOUR,
  };
  await prepare(now, outage);
  const codes = await query<{ code: string }>(dbUrl, 'SELECT code FROM currencies ORDER BY code');
  const fake = await new FakeBinance().start();
  fake.until = now + 24 * HOUR;
  const load = loadavg().map((n) => n.toFixed(1));
  try {
    const started = performance.now();
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(root, 'bin/platform.mjs'), 'heal', '--json'],
      {
        env: {
          ...process.env,
          DATABASE_URL: dbUrl,
          MARKET_SOURCE: 'binance',
          BINANCE_API_URL: fake.url,
          LOG_LEVEL: 'warn',
        },
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    const seconds = (performance.now() - started) / 1000;
    const results = JSON.parse(stdout) as Array<{ filled: number; errors: string[] }>;
    const [check] = await query<{ filled: number; twice: number; open: number }>(
      dbUrl,
      `SELECT (SELECT count(*)::int FROM price_observations
                WHERE time >= to_timestamp($1 / 1000.0) AND time < to_timestamp($2 / 1000.0)
                  AND source = 'binance') AS filled,
              (SELECT count(*)::int FROM (
                 SELECT 1 FROM price_observations
                  WHERE time >= to_timestamp($1 / 1000.0) AND time < to_timestamp($2 / 1000.0)
                  GROUP BY currency_code, date_trunc('minute', time) HAVING count(*) > 1) AS d) AS twice,
              (SELECT count(*)::int FROM currencies c,
                      heal_open_minutes(c.code, to_timestamp($3 / 1000.0), to_timestamp($2 / 1000.0))) AS open`,
      [outage.from, outage.to, outage.from - HOUR],
    );
    const expected = codes.length * OUTAGE_HOURS * 60;
    const klineCalls = fake.requests.filter((u) => u.pathname === '/api/v3/klines').length;
    console.log(
      `bench:heal — one \`platform heal\` pass, ${codes.length} currencies, ${OUTAGE_HOURS}-hour outage, fake Binance`,
    );
    console.log(`load average at start (1, 5, 15 min): ${load.join(', ')}`);
    console.log(
      `seconds (whole command): ${seconds.toFixed(1)}   (goal < ${GOAL_SECONDS} s: ${seconds < GOAL_SECONDS ? 'met' : 'MISSED'})`,
    );
    console.log(
      `kline requests: ${klineCalls}; minutes filled by the pass: ${results.reduce((s, r) => s + r.filled, 0)}`,
    );
    console.log(
      `outage minutes filled from the exchange: ${check?.filled} of ${expected}; minutes stored twice: ${check?.twice}; open minutes left in the outage: ${check?.open}`,
    );
    const errors = results.flatMap((r) => r.errors);
    if (errors.length > 0) console.log(`exchange errors: ${errors.slice(0, 5).join('; ')}`);
    if (check?.filled !== expected || check.twice !== 0 || check.open !== 0) process.exitCode = 1;
  } finally {
    await fake.stop();
    await dropBenchDatabase(DB);
  }
}

await main();
