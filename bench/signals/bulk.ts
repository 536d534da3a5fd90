// Signal-input throughput over HTTP: the bulk routes against their single twins (the baseline: one
// request per item, as the deployed clients send today), and the prediction read-back.
// Run with `npm run bench:signals`; it works in a throw-away database and drops it at the end.

import { performance } from 'node:perf_hooks';
import { sql } from 'slonik';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { loadConfig } from '../../src/shared/config.ts';
import { listen } from '../../src/shared/http/server.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createRuntime } from '../../src/shared/runtime.ts';
import {
  newsEvent,
  predictionRequest,
  trainingSessionRequest,
} from '../../test/support/signals.ts';
import { dropBenchDatabase, recreateDatabase } from '../shared/databases.ts';

const SINGLE_REQUESTS = 500;
const BULK_ITEMS = 10_000;
const BULK_REQUESTS = 3;

const DB = `bench_signals_${process.pid}`;
const url = await recreateDatabase(DB);
const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent' });
const runtime = await createRuntime(config, createLogger('silent'));
await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
const { token } = await createToken(runtime.pool, 'bench', ['read', 'write']);
const server = await listen(createDataService(runtime).app, '127.0.0.1', 0);

async function send(path: string, body: unknown): Promise<unknown> {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const answer: unknown = await response.json();
  if (response.status >= 300)
    throw new Error(`${path}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

async function rate(items: number, work: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await work();
  return items / ((performance.now() - started) / 1000);
}

let nextArticle = 1;
const { predictionId } = (await send('/data/predictions/add', predictionRequest())) as {
  predictionId: number;
};
const kinds: Array<[string, string, () => unknown]> = [
  ['news sentiment', '/data/news-sentiment/add', () => newsEvent({ articleId: nextArticle++ })],
  ['predictions', '/data/predictions/add', () => predictionRequest()],
  ['training sessions', '/data/training-session/add', () => trainingSessionRequest(predictionId)],
];

const rows: string[] = [];
for (const [name, path, item] of kinds) {
  const single = await rate(SINGLE_REQUESTS, async () => {
    for (let i = 0; i < SINGLE_REQUESTS; i++) await send(path, item());
  });
  const bulk = await rate(BULK_ITEMS * BULK_REQUESTS, async () => {
    for (let r = 0; r < BULK_REQUESTS; r++) {
      await send(`${path}/bulk`, Array.from({ length: BULK_ITEMS }, item));
    }
  });
  rows.push(
    `| ${name} | ${Math.round(single)} | ${Math.round(bulk)} | ×${(bulk / single).toFixed(0)} |`,
  );
}

// Read-back: 10,000 predictions spread over 35 days of one-minute prices, evaluated per day.
const start = Date.parse('2026-01-01T00:00:00Z');
await runtime.pool.query(sql.unsafe`
  INSERT INTO price_observations (currency_code, time, open, high, low, close, source)
  SELECT 'ETH', t, 2000, 2000, 2000, 2000 + random(), 'bench'
  FROM generate_series(${new Date(start).toISOString()}::timestamptz, ${new Date(start + 35 * 86_400_000).toISOString()}::timestamptz, interval '1 minute') t
`);
const predictions = Array.from({ length: BULK_ITEMS }, (_, i) =>
  predictionRequest({
    currencyCode: 'ETH',
    lastUpdated: new Date(start + 1000 + i * 300_000).toISOString(),
  }),
);
await send('/data/predictions/add/bulk', predictions);
const readStarted = performance.now();
const read = await fetch(
  `${server.url}/data/predictions?code=ETH&from=2026-01-01&to=2026-02-05&intervalSeconds=86400`,
  { headers: { authorization: `Bearer ${token}` } },
);
const buckets = ((await read.json()) as { buckets: unknown[] }).buckets.length;
const readMs = performance.now() - readStarted;

console.log(
  `Signal inputs over HTTP, items per second (single: ${SINGLE_REQUESTS} sequential requests;`,
);
console.log(`bulk: ${BULK_REQUESTS} sequential requests of ${BULK_ITEMS} items, JSON arrays)\n`);
console.log('| kind | single route (baseline) | bulk route | speed-up |');
console.log('|---|---|---|---|');
for (const row of rows) console.log(row);
console.log(
  `\nGET /data/predictions, ${BULK_ITEMS} predictions against 35 days of 1-minute prices, ` +
    `${buckets} daily buckets: ${Math.round(readMs)} ms`,
);

await server.close();
await runtime.close();
await dropBenchDatabase(DB);
