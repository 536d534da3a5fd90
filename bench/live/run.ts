// bench:live — time from the publication of a price event (NOTIFY price_ticks, as the harvester
// sends it) to its receipt by every one of N Socket.IO clients following every currency, and the
// memory of the API process. The API (and the data module it reads current prices from) runs in
// this process; the clients run in separate ones (clients.ts, two by default). Throw-away database.
//
//   npm run bench:live                 # N = 1000 and 5000
//   BENCH_CLIENTS=1000,2000 npm run bench:live
//   BENCH_MODE=price npm run bench:live  # a `price` event per currency instead of batches
//   BENCH_CLIENT_PROCESSES=1 npm run bench:live  # all clients in one process (default 2)

import { fork, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { sql } from 'slonik';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { priceTickPayloads, PRICE_TICKS_CHANNEL } from '../../src/data/prices/priceEvents.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { createApiService } from '../../src/api/service.ts';
import { loadConfig } from '../../src/shared/config.ts';
import { listen } from '../../src/shared/http/server.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createRuntime } from '../../src/shared/runtime.ts';
import { dropBenchDatabase, recreateDatabase } from '../shared/databases.ts';

const CLIENT_COUNTS = (process.env.BENCH_CLIENTS ?? '1000,5000').split(',').map(Number);
const TICKS = Number(process.env.BENCH_TICKS ?? 10);
/** `batch` (one `prices` event per cycle, what the dashboard uses) or `price` (one per code). */
const MODE = process.env.BENCH_MODE ?? 'batch';
const TICK_SPACING_MS = 2500; // longer than the 1 s coalescing window: every tick goes out at once
/** Client processes sharing the N connections (the API keeps this process to itself). */
const CLIENT_PROCESSES = Number(process.env.BENCH_CLIENT_PROCESSES ?? 2);

const DB = `bench_live_${process.pid}`;
const url = await recreateDatabase(DB);
const config = loadConfig({
  DATABASE_URL: url,
  LOG_LEVEL: 'silent',
  SESSION_KEYS: 'bench-session-key-0123456789abcdef0123456789',
});
const runtime = await createRuntime(config, createLogger('silent'));
await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
const codes = (
  await runtime.pool.anyFirst(sql.unsafe`SELECT code FROM currencies ORDER BY code`)
).map(String);
const { token } = await createToken(runtime.pool, 'bench', ['read']);
const data = await listen(createDataService(runtime).app, '127.0.0.1', 0);
const service = createApiService(runtime, { dataUrl: data.url, dataToken: token });
const api = await listen(service.app, '127.0.0.1', 0);
service.live.attach(api.server);

const notifier = new pg.Client({ connectionString: url });
await notifier.connect();
let price = 100;

/** Publishes one tick of `tickCodes` stamped with the publication instant; returns the stamp. */
async function publish(tickCodes: readonly string[]): Promise<{ at: string; sentAt: number }> {
  price += 1;
  const sentAt = Date.now();
  const at = new Date(sentAt);
  for (const payload of priceTickPayloads(
    at,
    tickCodes.map((code) => [code, price] as const),
  )) {
    await notifier.query('SELECT pg_notify($1, $2)', [PRICE_TICKS_CHANNEL, payload]);
  }
  return { at: at.toISOString(), sentAt };
}

interface Receipts {
  first: number[];
  last: number[];
  seen: number[];
}

/** The next IPC message of a client process; its exit before answering is an error. */
function nextMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`clients exited with ${code}`));
    child.once('exit', onExit);
    child.once('message', (message) => {
      child.off('exit', onExit);
      resolve(message as T);
    });
  });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mib = (bytes: number) => Math.round(bytes / 1024 / 1024);

interface Row {
  clients: number;
  codesPerTick: number;
  connectMs: number;
  complete: number;
  lastP50: number;
  lastP99: number;
  firstP50: number;
  firstP99: number;
  rssMiB: number;
  heapMiB: number;
}

async function scenario(count: number): Promise<Row[]> {
  await publish(codes); // the book knows every code before clients subscribe
  const shares = Array.from({ length: CLIENT_PROCESSES }, (_, i) =>
    Math.floor((count + i) / CLIENT_PROCESSES),
  ).filter((share) => share > 0);
  const children = shares.map((share) =>
    fork(
      new URL('./clients.ts', import.meta.url),
      [api.url, String(share), JSON.stringify(codes), MODE],
      {
        execArgv: ['--max-old-space-size=8192'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      },
    ),
  );
  const connectStarted = Date.now();
  await Promise.all(children.map((child) => nextMessage(child)));
  const ready = { connectMs: Date.now() - connectStarted };
  const rows: Row[] = [];
  for (const tickCodes of [codes, codes.slice(0, 1)]) {
    const last: number[] = [];
    const first: number[] = [];
    let complete = 0;
    let rss = 0;
    let heap = 0;
    for (let t = 0; t < TICKS; t++) {
      await sleep(TICK_SPACING_MS);
      const { at, sentAt } = await publish(tickCodes);
      await sleep(TICK_SPACING_MS);
      const memory = process.memoryUsage();
      rss = Math.max(rss, memory.rss);
      heap = Math.max(heap, memory.heapUsed);
      const parts = await Promise.all(
        children.map((child) => {
          child.send({ kind: 'collect', timestamp: at });
          return nextMessage<Receipts>(child);
        }),
      );
      const r: Receipts = {
        first: parts.flatMap((part) => part.first),
        last: parts.flatMap((part) => part.last),
        seen: parts.flatMap((part) => part.seen),
      };
      for (let i = 0; i < count; i++) {
        if (r.seen[i] === tickCodes.length) complete += 1;
        if (r.seen[i]! > 0) {
          last.push(r.last[i]! - sentAt);
          first.push(r.first[i]! - sentAt);
        }
      }
    }
    last.sort((a, b) => a - b);
    first.sort((a, b) => a - b);
    rows.push({
      clients: count,
      codesPerTick: tickCodes.length,
      connectMs: ready.connectMs,
      complete: complete / (count * TICKS),
      lastP50: percentile(last, 50),
      lastP99: percentile(last, 99),
      firstP50: percentile(first, 50),
      firstP99: percentile(first, 99),
      rssMiB: mib(rss),
      heapMiB: mib(heap),
    });
  }
  await Promise.all(
    children.map((child) => {
      child.send({ kind: 'close' });
      return new Promise((resolve) => child.once('exit', resolve));
    }),
  );
  await sleep(1000);
  return rows;
}

const idle = process.memoryUsage();
console.log(
  `bench:live — mode ${MODE}, ${codes.length} currencies, ${TICKS} ticks per scenario, ` +
    `${CLIENT_PROCESSES} client processes, ` +
    `API process RSS idle ${mib(idle.rss)} MiB`,
);
const started = performance.now();
const results: Row[] = [];
for (const count of CLIENT_COUNTS) {
  try {
    results.push(...(await scenario(count)));
  } catch (error) {
    console.log(`N=${count}: did not fit (${String(error)})`);
  }
}
console.log(
  '\n| clients | codes per tick | all prices received | p50 to last price, ms | p99 to last price, ms | p50 to first, ms | p99 to first, ms | API RSS, MiB | API heap, MiB | connect all, s |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const r of results) {
  console.log(
    `| ${r.clients} | ${r.codesPerTick} | ${(r.complete * 100).toFixed(1)} % | ${r.lastP50} | ${r.lastP99} | ${r.firstP50} | ${r.firstP99} | ${r.rssMiB} | ${r.heapMiB} | ${(r.connectMs / 1000).toFixed(1)} |`,
  );
}
console.log(
  `\ngoal: p99 < 100 ms at 1,000 clients, < 250 ms at 5,000 (${((performance.now() - started) / 1000).toFixed(0)} s)`,
);

await notifier.end();
await service.live.close();
await api.close(1000);
await data.close(1000);
await runtime.close();
await dropBenchDatabase(DB);
