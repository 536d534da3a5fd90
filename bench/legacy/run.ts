// Benchmark of the analysis service's SQL on the legacy schema: a year of one-minute rows for
// the 136 shipped currencies, the client's `LIMIT 40000` history query and its evenly spaced
// query, timed at the client (pg, rows parsed) and at the server (EXPLAIN ANALYZE), as the
// read-only legacy role with search_path=legacy. Then what refresh_legacy costs: per harvest
// cycle (136 prices every 5 s, the steady state) and when catching up a backfilled day.
//
//   npm run bench:legacy [-- --days 365 --runs 10 --regenerate]
//
// Uses its own database (BENCH_DATABASE_URL, default postgres://127.0.0.1:5432/bench_legacy).
// The year of rows is written straight into legacy.market_snapshots by one SQL statement in the
// layout refresh_legacy writes (its columns made by refresh_legacy itself), since pushing 71 M raw
// candles through a backfill first would take the better part of an hour; the refresh is timed
// separately below. Kept between runs (--regenerate rebuilds it).
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { priceColumn, refreshLegacy } from '../../src/data/legacy/refresh.ts';
import { createLegacyRole, dropLegacyRole } from '../../src/data/legacy/role.ts';
import { markTouchedRanges } from '../../src/data/prices/invalidations.ts';
import { loadConfig } from '../../src/shared/config.ts';
import { ensureDatabase } from '../../src/shared/db/ensureDatabase.ts';
import { migrate } from '../../src/shared/db/migrate.ts';
import { createDatabasePool } from '../../src/shared/db/pool.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { formatSummary, summarize } from '../history/percentiles.ts';

const { values: args } = parseArgs({
  options: {
    days: { type: 'string', default: '365' },
    runs: { type: 'string', default: '10' },
    cycles: { type: 'string', default: '24' },
    regenerate: { type: 'boolean', default: false },
  },
});
const DAYS = Number(args.days);
const RUNS = Number(args.runs);
const CYCLES = Number(args.cycles);
const MIN = 60_000;
const log = (line: string) => process.stdout.write(`${line}\n`);
const url = process.env.BENCH_DATABASE_URL ?? 'postgres://127.0.0.1:5432/bench_legacy';

async function timed(once: () => Promise<unknown>) {
  await once(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await once();
    times.push(performance.now() - started);
  }
  return summarize(times);
}

/** Server time: EXPLAIN ANALYZE's execution time (rows produced, not sent), p50 / p95. */
async function serverTime(client: pg.Client, query: string) {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const { rows } = await client.query(`EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ${query}`);
    times.push(
      (rows[0]['QUERY PLAN'] as Array<{ 'Execution Time': number }>)[0]!['Execution Time'],
    );
  }
  return summarize(times);
}

const countRow = z.object({ n: z.number() });
const lastRow = z.object({ last: z.date().nullable() });

/** A year of minutes ending at `end`, every currency column filled (a smooth random walk). */
async function generateYear(pool: DatabasePool, columns: string[], end: number) {
  const start = end - DAYS * 1440 * MIN;
  log(`generating ${DAYS * 1440} rows × ${columns.length} price columns …`);
  const started = performance.now();
  await pool.query(sql.unsafe`TRUNCATE legacy.market_snapshots`);
  const values = columns.map(
    (column, k) =>
      sql.fragment`round((${100 + k * 37}::float8 * (1.2 + sin(g.i / ${500 + k}::float8) * 0.2 + random() * 0.01))::numeric, 6) AS ${sql.identifier([column])}`,
  );
  // A month per statement, so no single transaction grows too large.
  for (let from = start; from < end; from += 30 * 1440 * MIN) {
    const to = Math.min(end, from + 30 * 1440 * MIN);
    await pool.query(sql.unsafe`
      INSERT INTO legacy.market_snapshots (id, last_updated, ${sql.join(
        columns.map((c) => sql.identifier([c])),
        sql.fragment`, `,
      )})
      SELECT g.i, to_timestamp(g.i * 60), ${sql.join(values, sql.fragment`, `)}
      FROM generate_series(${from / MIN}::bigint, ${to / MIN - 1}::bigint) AS g(i)
    `);
  }
  await pool.query(sql.unsafe`VACUUM ANALYZE legacy.market_snapshots`);
  log(`generated in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

async function main() {
  const config = loadConfig({ ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' });
  const logger = createLogger('warn');
  await ensureDatabase(config.DATABASE_URL);
  await migrate(config.DATABASE_URL);
  const pool = await createDatabasePool(config.DATABASE_URL, { maxPoolSize: 2 });
  try {
    await generateCurrencies({ pool, logger, loadFromExchange: false });
    // refresh_legacy makes the columns (one per currency whose code is an identifier).
    await refreshLegacy(pool, { budgetMs: 0 });
    const codes = await pool.anyFirst(sql.type(z.object({ code: z.string() }))`
      SELECT code FROM currencies ORDER BY rank NULLS LAST, code
    `);
    const columns = codes.map(priceColumn).filter((c): c is string => c !== undefined);
    const rows = await pool.oneFirst(sql.type(countRow)`
      SELECT count(*)::int AS n FROM legacy.market_snapshots
    `);
    // The year ends an hour ago: the minutes since are left to the refresh benchmark below.
    const yearEnd = Math.floor((Date.now() - 3_600_000) / MIN) * MIN;
    if (args.regenerate || rows < DAYS * 1440) {
      await pool.query(sql.unsafe`TRUNCATE price_observations, legacy.stale_ranges`);
      await generateYear(pool, columns, yearEnd);
    }
    const size = await pool.oneFirst(sql.type(z.object({ size: z.string() }))`
      SELECT pg_size_pretty(pg_total_relation_size('legacy.market_snapshots')) AS size
    `);
    const total = await pool.oneFirst(sql.type(countRow)`
      SELECT count(*)::int AS n FROM legacy.market_snapshots
    `);
    log(`legacy.market_snapshots: ${total} rows, ${columns.length} price columns, ${size}`);

    await queries(pool, config.DATABASE_URL, codes.length, columns, total);
    await refreshCost(pool, codes);
  } finally {
    await pool.end();
  }
}

async function queries(
  pool: DatabasePool,
  databaseUrl: string,
  currencies: number,
  columns: string[],
  total: number,
) {
  const role = `bench_legacy_${randomBytes(3).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  await createLegacyRole(pool, role, password);
  const connection = new URL(databaseUrl);
  connection.username = role;
  connection.password = password;
  connection.searchParams.set('options', '-c search_path=legacy');
  const client = new pg.Client({ connectionString: connection.toString() });
  await client.connect();
  try {
    const list = columns.join(', ');
    const history = `SELECT last_updated, ${list} FROM market_snapshots ORDER BY last_updated DESC LIMIT 40000`;
    const limit = 5000;
    const step = Math.max(1, Math.floor(total / limit));
    const spaced =
      'WITH bounds AS (SELECT MIN(id) AS min_id, MAX(id) AS max_id FROM market_snapshots), ' +
      `ids AS (SELECT generate_series(max_id, min_id, -${step}) AS id FROM bounds) ` +
      `SELECT last_updated, ${list} FROM ids JOIN market_snapshots USING (id) ORDER BY last_updated DESC`;
    const current = "SELECT * FROM currencies WHERE currency_code = 'BTC'";
    log('');
    log(
      `client SQL as a legacy role (search_path=legacy), ${currencies} currencies, ${columns.length} columns; ` +
        `${RUNS} runs each, ms p50 / p95`,
    );
    log('| query | rows | client (pg, rows parsed) | server (EXPLAIN ANALYZE) |');
    log('|---|---|---|---|');
    for (const [name, text] of [
      ['history `LIMIT 40000`', history],
      [`spaced (step ${step})`, spaced],
      ['current price of BTC', current],
    ] as const) {
      let count = 0;
      const clientTime = await timed(async () => {
        count = (await client.query(text)).rowCount ?? 0;
      });
      const server = await serverTime(client, text);
      log(`| ${name} | ${count} | ${formatSummary(clientTime)} | ${formatSummary(server)} |`);
    }
  } finally {
    await client.end();
    await dropLegacyRole(pool, role);
  }
}

/**
 * refresh_legacy per harvest cycle: 136 prices every 5 s after the year's last row, each cycle
 * followed by one refresh (as the worker runs it); then a backfilled day of one-minute candles
 * for every currency, marked as backfills mark, caught up.
 */
async function refreshCost(pool: DatabasePool, codes: readonly string[]) {
  const last = (
    await pool.one(sql.type(lastRow)`
    SELECT max(last_updated) AS last FROM legacy.market_snapshots
  `)
  ).last!.getTime();
  await pool.query(
    sql.unsafe`DELETE FROM price_observations WHERE time > ${sql.timestamp(new Date(last))}`,
  );
  const times: number[] = [];
  let now = last + MIN;
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    now += 5000;
    await pool.query(sql.unsafe`
      INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
      SELECT code, ${sql.timestamp(new Date(now))}, p, p, p, p, 0, 'bench'
      FROM (SELECT code, 100 + random() AS p FROM unnest(${sql.array([...codes], 'text')}) AS c(code)) x
      ON CONFLICT DO NOTHING
    `);
    const started = performance.now();
    await refreshLegacy(pool, { now: new Date(now) });
    times.push(performance.now() - started);
  }
  const perCycle = summarize(times);
  log('');
  log(
    `refresh_legacy per harvest cycle (${codes.length} prices every 5 s, ${CYCLES} cycles): ` +
      `p50 / p95 ${formatSummary(perCycle)} ms, max ${Math.max(...times).toFixed(1)} ms`,
  );

  // A backfilled day in the middle of the year: 1440 one-minute candles per currency.
  const dayStart = Math.floor((last - 180 * 1440 * MIN) / MIN) * MIN;
  const dayEnd = dayStart + 1440 * MIN;
  await pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`
      INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
      SELECT code, t, p, p, p, p, 1, 'bench'
      FROM unnest(${sql.array([...codes], 'text')}) AS c(code),
           generate_series(${sql.timestamp(new Date(dayStart))}, ${sql.timestamp(new Date(dayEnd - MIN))}, INTERVAL '1 minute') AS t,
           LATERAL (SELECT 100 + random() AS p) x
      ON CONFLICT DO NOTHING
    `);
    await markTouchedRanges(
      tx,
      codes.map((code) => ({ code, from: new Date(dayStart), to: new Date(dayEnd - MIN) })),
    );
  });
  const started = performance.now();
  let steps = 0;
  for (;;) {
    const result = await refreshLegacy(pool, { now: new Date(now), budgetMs: 0 });
    steps += result.steps;
    if (result.caughtUp) break;
  }
  const dayMs = performance.now() - started;
  log(
    `refresh_legacy catching up a backfilled day (${codes.length} × 1440 candles, ${steps} steps): ` +
      `${dayMs.toFixed(0)} ms, so about ${((dayMs * DAYS) / 60_000).toFixed(1)} min for ${DAYS} days`,
  );
}

await main();
