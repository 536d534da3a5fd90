// bench:ingest — loads the same ≥5 M one-minute candles three ways into fresh databases:
//   (a) `platform backfill <csv>` (the real command: CSV parse, validation, binary COPY),
//   (b) `psql -c "\copy …"` into the same hypertable (the practical ceiling),
//   (c) one INSERT per row, as a naive loader does (a 50k-row sample, extrapolated).
// Prints rows/s, the ratios to the goals (a ≥ 0.9 × b, a ≥ 20 × c) and the peak RSS of (a).
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { CODES, count, freshDatabase, generateCsv, out, root, csvPathFor } from './common.ts';
import { dropBenchDatabase } from '../shared/databases.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 5_000_000);
const NAIVE_SAMPLE = Number(process.env.BENCH_NAIVE_ROWS ?? 20_000);
const csvPath = csvPathFor(ROWS);

/** (a) the real command, under /usr/bin/time for its peak RSS. */
async function viaBackfill() {
  const url = await freshDatabase('bench_ingest_backfill');
  const node = join(root, 'node_modules', '.bin', 'node');
  const started = performance.now();
  const run = spawnSync(
    '/usr/bin/time',
    ['-f', 'maxrss_kb=%M', node, join(root, 'bin', 'platform.mjs'), 'backfill', csvPath, '--json'],
    {
      env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' },
      encoding: 'utf8',
      maxBuffer: 1 << 26,
    },
  );
  const seconds = (performance.now() - started) / 1000;
  if (run.status !== 0) throw new Error(`backfill failed: ${run.stderr}`);
  const summary = JSON.parse(run.stdout) as { inserted: number; seconds: number };
  const rssKb = Number(/maxrss_kb=(\d+)/.exec(run.stderr)?.[1]);
  const stored = await count(url);
  await dropBenchDatabase('bench_ingest_backfill');
  return { seconds, loadSeconds: summary.seconds, rows: stored, rssMb: rssKb / 1024 };
}

/** (b) psql's \copy of the same CSV into the same (fresh) hypertable. */
async function viaPsql() {
  const url = await freshDatabase('bench_ingest_psql');
  execFileSync('psql', [
    url,
    '-qc',
    `ALTER TABLE price_observations ALTER COLUMN source SET DEFAULT 'psql'`,
  ]);
  const started = performance.now();
  execFileSync('psql', [
    url,
    '-qc',
    `\\copy price_observations (time, currency_code, open, high, low, close, volume) FROM '${csvPath}' WITH (FORMAT csv, HEADER true)`,
  ]);
  const seconds = (performance.now() - started) / 1000;
  const stored = await count(url);
  await dropBenchDatabase('bench_ingest_psql');
  return { seconds, rows: stored };
}

/** (c) one INSERT statement (and transaction) per row, over a sample of the same rows. */
async function viaNaiveInserts() {
  const url = await freshDatabase('bench_ingest_naive');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const rows: string[][] = [];
  const { createReadStream } = await import('node:fs');
  const { createInterface } = await import('node:readline');
  const lines = createInterface({ input: createReadStream(csvPath) });
  for await (const line of lines) {
    if (line.startsWith('time')) continue;
    rows.push(line.split(','));
    if (rows.length >= NAIVE_SAMPLE) break;
  }
  lines.close();
  const started = performance.now();
  for (const r of rows) {
    await client.query(
      `INSERT INTO price_observations (time, currency_code, open, high, low, close, volume, source)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'naive')`,
      r,
    );
  }
  const seconds = (performance.now() - started) / 1000;
  await client.end();
  const stored = await count(url);
  await dropBenchDatabase('bench_ingest_naive');
  return { seconds, rows: stored };
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function main() {
  console.log(
    `generating ${fmt(ROWS)} one-minute candles (${CODES.length} currencies) → ${csvPath}`,
  );
  await generateCsv(ROWS);
  console.log('(a) platform backfill …');
  const a = await viaBackfill();
  console.log('(b) psql \\copy …');
  const b = await viaPsql();
  console.log(`(c) one INSERT per row (${fmt(NAIVE_SAMPLE)}-row sample) …`);
  const c = await viaNaiveInserts();
  const rateA = a.rows / a.seconds;
  const rateB = b.rows / b.seconds;
  const rateC = c.rows / c.seconds;
  const lines = [
    '',
    `| method | rows | seconds | rows/s |`,
    `|---|---:|---:|---:|`,
    `| (a) platform backfill (whole command) | ${fmt(a.rows)} | ${a.seconds.toFixed(1)} | ${fmt(rateA)} |`,
    `| (b) psql \\copy | ${fmt(b.rows)} | ${b.seconds.toFixed(1)} | ${fmt(rateB)} |`,
    `| (c) INSERT per row (sample, extrapolated) | ${fmt(c.rows)} | ${c.seconds.toFixed(1)} | ${fmt(rateC)} |`,
    '',
    `a / b = ${(rateA / rateB).toFixed(2)}  (goal ≥ 0.9)`,
    `a / c = ${(rateA / rateC).toFixed(1)}  (goal ≥ 20)`,
    `peak RSS of (a) = ${a.rssMb.toFixed(0)} MB  (goal < 300 MB)`,
    `(a) load phase alone (after start-up and migration check): ${a.loadSeconds.toFixed(1)} s, ${fmt(a.rows / a.loadSeconds)} rows/s`,
  ];
  console.log(lines.join('\n'));
  writeFileSync(
    join(out, 'ingest-results.json'),
    JSON.stringify({ rows: ROWS, a, b, c, rateA, rateB, rateC }, null, 2),
  );
}

await main();
