// Benchmark of history requests over HTTP against 50 currencies × one year of one-minute candles.
//
//   npm run bench:history [-- --currencies 50 --days 365 --requests 100 --regenerate]
//                         [--only 'interval=55m,hours=8760&intervalSeconds=3600']
//
// Uses its own database (BENCH_DATABASE_URL, default postgres://127.0.0.1:5432/bench_history),
// generates the history once (kept between runs) as the harvest writes it, lets the rollups
// catch up and puts closed chunks in currency order as the worker does, then times the
// contract's history route, served by the data module in its own process (`platform start --role
// data`) and requested from another (client.ts), beside two baselines computed in SQL from the
// raw rows. Two data processes answer: one with its cache of settled runs warm (one pass over
// the currencies first), and one with that cache off (HISTORY_CACHE_MB=0), which is what the
// first request of a currency-year costs: every run computed from the levels and raw rows.
// Prints the derived data's size against the raw table's too (storage.ts).
import { fork, type ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { bucketSql } from '../../src/data/history/gridSql.ts';
import { LEVEL_RELATIONS } from '../../src/data/history/levels.ts';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import { reorderClosedChunks } from '../../src/data/history/reorderChunks.ts';
import { readRollupStatus } from '../../src/data/history/rollupState.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { loadConfig } from '../../src/shared/config.ts';
import { ensureDatabase } from '../../src/shared/db/ensureDatabase.ts';
import { migrate } from '../../src/shared/db/migrate.ts';
import { createDatabasePool } from '../../src/shared/db/pool.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createRuntime } from '../../src/shared/runtime.ts';
import { startDataProcess, type DataProcess } from './dataProcess.ts';
import { BENCH_CODES, countRows, generateHistory } from './generate.ts';
import { layOutLevelsAsWritten } from './layout.ts';
import { formatSummary, summarize } from './percentiles.ts';
import { formatStorage, measureStorage } from './storage.ts';

const CASES: Array<[hours: number, intervalSeconds: number]> = [
  [24, 60],
  [168, 300],
  [720, 3600],
  [8760, 3600],
  [8760, 86_400],
  [6, 7],
];

/** Analyst requests: the route's query, and its window and grid for the raw baseline. */
const ANALYST_CASES: Array<{ query: string; hours: number; seconds: number; tz?: string }> = [
  { query: 'hours=8760&interval=1h', hours: 8760, seconds: 3600 },
  { query: 'hours=2160&interval=15m', hours: 2160, seconds: 900 },
  { query: 'hours=4320&interval=30m', hours: 4320, seconds: 1800 },
  { query: 'hours=8760&interval=4h', hours: 8760, seconds: 14_400 },
  { query: 'hours=720&interval=1h&fill=previous', hours: 720, seconds: 3600 },
  // Carrying fills over a year, run by run with seeds from the neighbouring runs: ~8,760 points.
  { query: 'hours=8760&interval=1h&fill=previous', hours: 8760, seconds: 3600 },
  { query: 'hours=8760&interval=1h&fill=linear', hours: 8760, seconds: 3600 },
  {
    query: 'hours=8760&interval=1d&tz=Asia/Kolkata',
    hours: 8760,
    seconds: 86_400,
    tz: 'Asia/Kolkata',
  },
  {
    query: 'hours=8760&interval=1d&tz=Asia/Kathmandu',
    hours: 8760,
    seconds: 86_400,
    tz: 'Asia/Kathmandu',
  },
  {
    query: 'hours=8760&interval=1d&tz=America/St_Johns',
    hours: 8760,
    seconds: 86_400,
    tz: 'America/St_Johns',
  },
  {
    query: 'hours=8760&interval=1d&tz=Europe/Berlin&fill=previous',
    hours: 8760,
    seconds: 86_400,
    tz: 'Europe/Berlin',
  },
  {
    query: 'hours=720&interval=4h&tz=America/New_York&fill=linear',
    hours: 720,
    seconds: 14_400,
    tz: 'America/New_York',
  },
  // Buckets under a day in a zone are fixed in time (over DST changes too): runs, kept.
  {
    query: 'hours=2160&interval=15m&tz=Europe/Berlin',
    hours: 2160,
    seconds: 900,
    tz: 'Europe/Berlin',
  },
  {
    query: 'hours=4320&interval=30m&tz=Asia/Kathmandu',
    hours: 4320,
    seconds: 1800,
    tz: 'Asia/Kathmandu',
  },
  {
    query: 'hours=8760&interval=1h&tz=America/St_Johns',
    hours: 8760,
    seconds: 3600,
    tz: 'America/St_Johns',
  },
  { query: 'hours=168&interval=90', hours: 168, seconds: 90 },
  // Widths that no level above candles_5m divides (5-minute rows), and widths of whole minutes
  // that are not multiples of 5 minutes, which only the raw rows can cut: each near 10,000 points.
  { query: 'hours=720&interval=5m', hours: 720, seconds: 300 },
  { query: 'hours=8760&interval=55m', hours: 8760, seconds: 3300 },
  { query: 'hours=1166&interval=7m', hours: 1166, seconds: 420 },
  // Where the raw minutes read (width × points) pass 50 ms at p95 on two cores: about 20 minutes.
  { query: 'hours=3829&interval=23m', hours: 3829, seconds: 1380 },
  { query: 'hours=8760&interval=61m', hours: 8760, seconds: 3660 },
];

const { values: args } = parseArgs({
  options: {
    currencies: { type: 'string', default: '50' },
    days: { type: 'string', default: '365' },
    requests: { type: 'string', default: '100' },
    'baseline-requests': { type: 'string', default: '20' },
    regenerate: { type: 'boolean', default: false },
    // Only the cases whose query (`hours=…&intervalSeconds=…` for the history route, `export`
    // for the export) contains one of these comma-separated texts.
    only: { type: 'string' },
  },
});
const chosen = (query: string) =>
  !args.only || args.only.split(',').some((text) => query.includes(text));

const log = (line: string) => process.stdout.write(`${line}\n`);
const f = formatSummary;

async function timed(runs: number, once: (i: number) => Promise<number>) {
  const times: number[] = [];
  let points = 0;
  for (let i = 0; i < 3; i++) await once(i); // warm-up
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    points = await once(i);
    times.push(performance.now() - started);
  }
  return { ...summarize(times), points };
}

/**
 * Requests over HTTP from the client process (client.ts), timed to the last byte of the body
 * (what wrk or autocannon report) and, beside it, including the client's JSON.parse of the body;
 * and the data module's CPU time per request (warm-ups included), which the machine's noise
 * moves far less than the latencies.
 */
async function timedRequests(
  server: DataProcess,
  client: ChildProcess,
  runs: number,
  url: (i: number) => string,
  token: string,
  warmUp = 3,
) {
  const urls = Array.from({ length: warmUp + runs }, (_, i) => url(i));
  const cpuBefore = server.cpuMs();
  client.send({ urls, token, warmUp });
  const result = await new Promise<{
    ok: boolean;
    error?: string;
    toLastByte: number[];
    withParse: number[];
    points: number;
  }>((resolve) => client.once('message', resolve));
  if (!result.ok) throw new Error(result.error);
  return {
    serverCpuMs: (server.cpuMs() - cpuBefore) / urls.length,
    ...summarize(result.toLastByte),
    parsed: summarize(result.withParse),
    points: result.points,
  };
}

function rawTimeBucket(pool: DatabasePool, code: string, hours: number, seconds: number) {
  return pool.any(sql.type(z.object({ t: z.date(), v: z.number() }))`
    SELECT time_bucket(make_interval(secs => ${seconds}::float8), time, TIMESTAMPTZ 'epoch') AS t,
           first(open, time) AS v
    FROM price_observations
    WHERE currency_code = ${code} AND time >= now() - make_interval(hours => ${hours}) AND time < now()
    GROUP BY 1 ORDER BY 1
  `);
}

/**
 * The analyst route's baseline: whole OHLCV candles by time_bucket over the raw rows, on the
 * request's grid (gridSql.ts: in the zone for its days, from its local midnight for shorter
 * buckets), without the fill, which only adds to the answer's work.
 */
function rawCandles(pool: DatabasePool, code: string, hours: number, seconds: number, tz?: string) {
  const bucket = bucketSql(
    { intervalSeconds: seconds, ...(tz ? { timeZone: tz } : {}) },
    sql.fragment`time`,
  );
  return pool.any(sql.type(z.object({ t: z.date() }).passthrough())`
    SELECT ${bucket} AS t, first(open, time) AS open, max(high) AS high, min(low) AS low,
           last(close, time) AS close, sum(volume) AS volume, count(*) AS count
    FROM price_observations
    WHERE currency_code = ${code} AND time >= now() - make_interval(hours => ${hours}) AND time < now()
    GROUP BY 1 ORDER BY 1
  `);
}

function seriesJoin(pool: DatabasePool, code: string, hours: number, seconds: number) {
  return pool.any(sql.type(z.object({ t: z.date(), v: z.number() }))`
    WITH w AS (SELECT now() - make_interval(hours => ${hours}) AS "from", now() AS "to",
                      make_interval(secs => ${seconds}::float8) AS width)
    SELECT b AS t, first_row.open AS v
    FROM w, generate_series(time_bucket(w.width, w."from", TIMESTAMPTZ 'epoch'), w."to", w.width) AS b
    CROSS JOIN LATERAL (
      SELECT open FROM price_observations p
      WHERE p.currency_code = ${code} AND p.time >= greatest(b, w."from") AND p.time < least(b + w.width, w."to")
      ORDER BY p.time LIMIT 1
    ) AS first_row
    ORDER BY b
  `);
}

/** Streams a long export over HTTP, counting lines and watching the data module's memory. */
async function measureExport(server: DataProcess, token: string, code: string, days: number) {
  const base = server.url;
  const rssBeforeMb = server.rssMb();
  let rssPeakMb = rssBeforeMb;
  const sampler = setInterval(() => {
    rssPeakMb = Math.max(rssPeakMb, server.rssMb());
  }, 50);
  const started = performance.now();
  const response = await fetch(
    `${base}/data/candles/${code}/export?hours=${days * 24}&interval=1m&format=csv`,
    { headers: { authorization: `Bearer ${token}` } },
  );
  let bytes = 0;
  let rows = -1; // the header line
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.byteLength;
    for (const byte of chunk) if (byte === 10) rows++;
  }
  clearInterval(sampler);
  return { rows, bytes, seconds: (performance.now() - started) / 1000, rssBeforeMb, rssPeakMb };
}

async function main() {
  const currencies = Number(args.currencies);
  const days = Number(args.days);
  const requests = Number(args.requests);
  const baselineRequests = Number(args['baseline-requests']);
  const codes = BENCH_CODES.slice(0, currencies);
  const url = process.env.BENCH_DATABASE_URL ?? 'postgres://127.0.0.1:5432/bench_history';
  const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'warn', HISTORY_MAX_POINTS: '50000' });
  await ensureDatabase(config.DATABASE_URL);
  await migrate(config.DATABASE_URL);
  const runtime = await createRuntime(config, createLogger('warn'));
  // Generating a currency-year or catching up a rollup level may take minutes on a busy machine.
  const bulkPool = await createDatabasePool(config.DATABASE_URL, {
    maxPoolSize: 2,
    statementTimeoutMs: 3_600_000,
  });
  try {
    const expected = currencies * days * 1440;
    if (args.regenerate) {
      await runtime.pool.query(
        sql.unsafe`TRUNCATE price_observations, ${sql.join(
          LEVEL_RELATIONS.map((relation) => sql.identifier([relation])),
          sql.fragment`, `,
        )}`,
      );
      await runtime.pool.query(sql.unsafe`UPDATE rollup_watermarks SET watermark = NULL`);
    }
    const existing = await countRows(runtime.pool);
    const generating = existing < expected;
    if (generating) {
      log(
        `generating ${currencies} currencies × ${days} days of one-minute candles (${expected.toLocaleString('en')} rows)`,
      );
      const started = Date.now();
      await generateHistory(bulkPool, codes, days, log);
      log(`generated in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    } else {
      log(`reusing ${existing.toLocaleString('en')} generated rows`);
    }
    await bulkPool.query(sql.unsafe`ANALYZE price_observations`);

    // The routes answer 404 for a code missing from the currency list.
    await runtime.pool.query(sql.unsafe`
      INSERT INTO currencies (code, name)
      SELECT code, 'Benchmark ' || code FROM unnest(${sql.array(codes, 'text')}) AS code
      ON CONFLICT (code) DO NOTHING
    `);

    const refreshStarted = Date.now();
    for (;;) {
      const result = await refreshRollups(bulkPool, { timeBudgetMs: 60_000 });
      const status = await readRollupStatus(runtime.pool);
      log(
        `  rollups: ${status.levels.map((l) => `${l.level} lag ${l.lagSeconds ?? '-'} s`).join(', ')}`,
      );
      if (result.caughtUp) break;
    }
    log(`rollups caught up in ${((Date.now() - refreshStarted) / 1000).toFixed(0)} s`);
    if (generating) {
      const started = Date.now();
      const chunks = await layOutLevelsAsWritten(bulkPool);
      const seconds = ((Date.now() - started) / 1000).toFixed(0);
      log(
        `level chunks rewritten in write order, as the refresh writes them: ${chunks} in ${seconds} s`,
      );
    }
    // What the worker's reorder_chunks does over its hourly runs: closed chunks in currency order.
    const reorderStarted = Date.now();
    let reordered = 0;
    for (;;) {
      const result = await reorderClosedChunks(bulkPool);
      reordered += result.reordered.length;
      if (result.reordered.length === 0) break;
    }
    const reorderSeconds = ((Date.now() - reorderStarted) / 1000).toFixed(0);
    log(`closed chunks put in currency order: ${reordered} in ${reorderSeconds} s`);
    // Autovacuum gets there on its own only after a fifth of a chunk's rows are new (its default
    // insert threshold), so an open chunk's newest pages may wait weeks; measured on a year at
    // 1 h with 60 days of candles_1h not vacuumed, the difference was within noise (10.3 vs 9.7
    // ms p50). Vacuumed here so that runs compare alike.
    for (const relation of LEVEL_RELATIONS) {
      await bulkPool.query(sql.unsafe`VACUUM ANALYZE ${sql.identifier([relation])}`);
    }
    log('');
    log('Storage, derived data against the raw table:');
    for (const line of formatStorage(await measureStorage(bulkPool))) log(line);

    const server = await startDataProcess(config.DATABASE_URL);
    const uncached = await startDataProcess(config.DATABASE_URL, undefined, {
      HISTORY_CACHE_MB: '0',
    });
    const { token } = await createToken(runtime.pool, `bench-${Date.now()}`, ['read']);
    const client = fork(new URL('./client.ts', import.meta.url), { stdio: 'inherit' });
    /** The same requests to the cached data process after a pass over every currency, and to the uncached one. */
    const bothWays = async (url: (base: string, i: number) => string) => ({
      warm: await timedRequests(
        server,
        client,
        requests,
        (i) => url(server.url, i),
        token,
        codes.length,
      ),
      off: await timedRequests(uncached, client, requests, (i) => url(uncached.url, i), token),
    });
    const speedUp = (raw: { p50: number; p95: number }, got: { p50: number; p95: number }) =>
      `${(raw.p50 / got.p50).toFixed(1)}× / ${(raw.p95 / got.p95).toFixed(1)}×`;
    try {
      log('');
      log(
        '| hours | intervalSeconds | points | endpoint, cache warm p50 / p95 (ms) | + client JSON.parse p50 / p95 (ms) | data module CPU per request (ms) | endpoint, first request (cache off) p50 / p95 (ms) | data module CPU per request, cache off (ms) | raw time_bucket p50 / p95 (ms) | generate_series + first row p50 / p95 (ms) | speed-up p50 / p95 vs raw, cache warm | cache off |',
      );
      log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
      for (const [hours, seconds] of CASES) {
        if (!chosen(`hours=${hours}&intervalSeconds=${seconds}`)) continue;
        const { warm, off } = await bothWays(
          (base, i) =>
            `${base}/data/currency/history/${codes[i % codes.length]}?hours=${hours}&intervalSeconds=${seconds}`,
        );
        const raw = await timed(
          baselineRequests,
          async (i) =>
            (await rawTimeBucket(runtime.pool, codes[i % codes.length]!, hours, seconds)).length,
        );
        const series = await timed(
          baselineRequests,
          async (i) =>
            (await seriesJoin(runtime.pool, codes[i % codes.length]!, hours, seconds)).length,
        );
        log(
          `| ${hours} | ${seconds} | ${warm.points} | ${f(warm)} | ${f(warm.parsed)} | ${warm.serverCpuMs.toFixed(1)} | ${f(off)} | ${off.serverCpuMs.toFixed(1)} | ${f(raw)} | ${f(series)} | ${speedUp(raw, warm)} | ${speedUp(raw, off)} |`,
        );
      }

      log('');
      log('Analyst route (/data/candles, full OHLCV):');
      log(
        '| query | points | cache warm p50 / p95 (ms) | + client JSON.parse p50 / p95 (ms) | data module CPU per request (ms) | first request (cache off) p50 / p95 (ms) | data module CPU per request, cache off (ms) | raw time_bucket p50 / p95 (ms) | speed-up p50 / p95 vs raw, cache warm | cache off |',
      );
      log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
      for (const { query, hours, seconds, tz } of ANALYST_CASES) {
        if (!chosen(query)) continue;
        const { warm, off } = await bothWays(
          (base, i) => `${base}/data/candles/${codes[i % codes.length]}?${query}`,
        );
        const raw = await timed(
          baselineRequests,
          async (i) =>
            (await rawCandles(runtime.pool, codes[i % codes.length]!, hours, seconds, tz)).length,
        );
        log(
          `| \`${query}\` | ${warm.points} | ${f(warm)} | ${f(warm.parsed)} | ${warm.serverCpuMs.toFixed(1)} | ${f(off)} | ${off.serverCpuMs.toFixed(1)} | ${f(raw)} | ${speedUp(raw, warm)} | ${speedUp(raw, off)} |`,
        );
      }

      log('');
      if (chosen('export')) {
        const exportResult = await measureExport(server, token, codes[0]!, days);
        log(
          `Export of ${codes[0]} at 1-minute resolution over ${days} days as CSV: ${exportResult.rows.toLocaleString('en')} rows, ` +
            `${(exportResult.bytes / 1e6).toFixed(1)} MB in ${exportResult.seconds.toFixed(1)} s; ` +
            `data module RSS ${exportResult.rssBeforeMb.toFixed(0)} MB before, at most ${exportResult.rssPeakMb.toFixed(0)} MB during.`,
        );
      }
    } finally {
      client.send('exit');
      await server.stop();
      await uncached.stop();
    }
  } finally {
    await bulkPool.end();
    await runtime.close();
  }
}

await main();
