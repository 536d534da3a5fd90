// bench:load — a bounded load test of the read routes and of sign-in, with a bulk backfill
// running at the same time in another process (`platform backfill` of a 1 M-row CSV):
//   data  GET /data/currency/history/BTC?hours=24&intervalSeconds=60   (1,440 points)
//   data  GET /data/currency/all                                       (the snapshot of 136 coins)
//   api   GET /api/portfolio/history/get?hours=24                      (signed in)
//   api   GET /api/portfolio/get                                       (snapshot valuation)
//   api   POST /api/authorize/login                                    (argon2id verification)
// Each target runs BENCH_SECONDS (default 20) with BENCH_CONNECTIONS (default 10) connections;
// prints requests/s, p50/p97.5/p99 latency, errors and non-2xx answers. Exit code 1 on any error.
import { benchDatabaseUrl, recreateDatabase } from '../shared/databases.ts';
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { sql } from 'slonik';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { createApiService } from '../../src/api/service.ts';
import { loadConfig } from '../../src/shared/config.ts';
import { listen } from '../../src/shared/http/server.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createRuntime } from '../../src/shared/runtime.ts';
import { writeMinutePricesCsv } from '../../test/support/prices.ts';
import { runFlood } from './flood.ts';
import { runRefusalCost } from './refusalCost.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const BACKFILL_ROWS = Number(process.env.BENCH_BACKFILL_ROWS ?? 1_000_000);
const DB = 'bench_load';
const dbUrl = benchDatabaseUrl(DB);

async function backfillCsv(): Promise<string> {
  const dir = join(root, 'bench', 'out');
  mkdirSync(dir, { recursive: true });
  return writeMinutePricesCsv(
    join(dir, `load-backfill-${BACKFILL_ROWS}.csv`),
    'SOL',
    BACKFILL_ROWS,
    {
      startMs: Date.UTC(2016, 0, 1),
      price: (i) => (200 + Math.sin(i / 300) * 20).toFixed(4),
    },
  );
}

interface Target {
  name: string;
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

async function measure(target: Target) {
  const result = await autocannon({
    url: target.url,
    method: target.method ?? 'GET',
    headers: target.headers,
    body: target.body,
    connections: CONNECTIONS,
    duration: SECONDS,
  });
  return {
    target: target.name,
    requests: result.requests.total,
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p97_5: result.latency.p97_5,
    p99: result.latency.p99,
    max: result.latency.max,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

async function main() {
  await recreateDatabase(DB);
  const config = loadConfig({
    DATABASE_URL: dbUrl,
    LOG_LEVEL: 'warn',
    PLATFORM_LOAD_CURRENCIES: 'false',
    SESSION_KEYS: 'bench-load-session-key-0123456789abcdef0123',
  });
  const runtime = await createRuntime(config, createLogger('warn'));
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  // A day of minute prices for BTC and ETH, and current snapshots of every coin.
  await runtime.pool.query(sql.unsafe`
    INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
    SELECT c, t, p, p, p, p, 1, 'bench'
    FROM unnest(ARRAY['BTC','ETH']) AS c,
         generate_series(date_trunc('minute', now()) - interval '25 hours', now(), interval '1 minute') AS t,
         LATERAL (SELECT 50000 + 1000 * sin(extract(epoch FROM t) / 3600) AS p) AS price`);
  await runtime.pool.query(sql.unsafe`
    INSERT INTO currency_snapshots (currency_code, price, observed_at, source)
    SELECT code, 1 + row_number() OVER (), now(), 'bench' FROM currencies`);
  const { token } = await createToken(runtime.pool, 'bench', ['read', 'write']);
  const data = await listen(createDataService(runtime).app, '127.0.0.1', 0);
  const api = await listen(
    createApiService(runtime, { dataUrl: data.url, dataToken: token }).app,
    '127.0.0.1',
    0,
  );

  const account = {
    email: 'bench@example.com',
    username: 'bench',
    password: 'bench load passphrase',
  };
  const signup = await fetch(`${api.url}/api/authorize/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(account),
  });
  const cookie = signup.headers
    .getSetCookie()
    .map((line) => line.split(';')[0])
    .join('; ');
  await fetch(`${api.url}/api/portfolio/add`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie },
    body: JSON.stringify({ currencyCode: 'BTC', shares: 2, walletDollars: 100 }),
  });

  // The backfill, in its own process, for the whole measurement.
  const csv = await backfillCsv();
  const node = join(root, 'node_modules', '.bin', 'node');
  const startBackfill = () =>
    spawn(node, [join(root, 'bin', 'platform.mjs'), 'backfill', '--force', csv], {
      env: { ...process.env, DATABASE_URL: dbUrl, LOG_LEVEL: 'warn' },
      stdio: 'ignore',
    });
  let backfills = 0;
  let stopping = false;
  let backfill = startBackfill();
  const keepBackfilling = () => {
    backfill.once('exit', () => {
      backfills += 1;
      if (stopping) return;
      backfill = startBackfill();
      keepBackfilling();
    });
  };
  keepBackfilling();

  const targets: Target[] = [
    {
      name: 'data history (1,440 points)',
      url: `${data.url}/data/currency/history/BTC?hours=24&intervalSeconds=60`,
      headers: { authorization: `Bearer ${token}` },
    },
    {
      name: 'data snapshot (all)',
      url: `${data.url}/data/currency/all`,
      headers: { authorization: `Bearer ${token}` },
    },
    {
      name: 'api portfolio history 24 h',
      url: `${api.url}/api/portfolio/history/get?hours=24`,
      headers: { cookie },
    },
    { name: 'api portfolio (snapshot)', url: `${api.url}/api/portfolio/get`, headers: { cookie } },
    {
      name: 'api login (argon2id)',
      url: `${api.url}/api/authorize/login`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: account.email, password: account.password }),
    },
  ];
  const results = [];
  for (const target of targets) {
    const result = await measure(target);
    console.log(JSON.stringify(result));
    results.push(result);
  }
  stopping = true;
  backfill.kill('SIGTERM');
  await once(backfill, 'exit').catch(() => {});
  const observations = await runtime.pool.oneFirst(
    sql.unsafe`SELECT count(*)::int FROM price_observations WHERE currency_code = 'SOL'`,
  );
  // Requests autocannon abandoned at the end (a login takes seconds) finish before the pools close.
  await Promise.all([api.close(10_000), data.close(10_000)]);
  await runtime.close();

  console.log(
    `\n${SECONDS} s per target, ${CONNECTIONS} connections; concurrent backfill runs: ${backfills + 1} ` +
      `(${BACKFILL_ROWS.toLocaleString('en')} rows each, ${String(observations)} SOL rows stored)\n`,
  );
  console.log(
    '| target | requests | req/s | p50 ms | p97.5 ms | p99 ms | max ms | errors | non-2xx |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(
      `| ${r.target} | ${r.requests} | ${r.rps} | ${r.p50} | ${r.p97_5} | ${r.p99} | ${r.max} | ${r.errors} | ${r.non2xx} |`,
    );
  }
  const failed = results.some((r) => r.errors > 0 || r.non2xx > 0);
  if (failed) console.error('\nload: some requests failed');
  process.exitCode = failed ? 1 : 0;
}

// `npm run bench:load -- --flood`: the admission-control scenario (flood.ts) instead;
// `-- --refusal-cost`: what one refused request costs the API (refusalCost.ts).
if (process.argv.includes('--flood')) await runFlood();
else if (process.argv.includes('--refusal-cost')) await runRefusalCost();
else await main();
