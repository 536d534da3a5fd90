// bench:ingest:archive — the archive fast path against psql's \copy, whole command, in one run:
//   (a) `platform backfill --source binance-archive …` against a local server that serves Binance's
//       archive layout (zip + .CHECKSUM): download, checksum, unzip in memory, parse, binary COPY;
//   (b) `psql -c "\copy …"` of the same rows (as a CSV on disk) into the same hypertable.
// Two cases of ~2 M rows each: one 2 M-row zip (a month of 1s klines, BTCUSDT-1s-2024-01.zip),
// and 46 monthly 1m zips (ETHUSDT 2020-01 … 2023-10, 2,016,000 rows). Each load goes into a fresh,
// migrated database. Prints seconds, rows/s and a / b (goal ≥ 1.0) with the load average.
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';
import { count, freshDatabase, out as benchOut, root } from './common.ts';
import { dropBenchDatabase } from '../shared/databases.ts';

const out = join(benchOut, 'archive');
const ROWS = Number(process.env.BENCH_ROWS ?? 2_000_000);

interface Case {
  name: string;
  code: string;
  symbol: string;
  interval: string;
  stepMs: number;
  from: string;
  to: string;
  /** Archive periods (YYYY-MM) and the rows of each. */
  months: Array<{ period: string; startMs: number; rows: number }>;
}

function monthsOf(startYear: number, count: number) {
  return Array.from({ length: count }, (_, i) => {
    const startMs = Date.UTC(startYear, i, 1);
    const endMs = Date.UTC(startYear, i + 1, 1);
    return {
      period: new Date(startMs).toISOString().slice(0, 7),
      startMs,
      rows: (endMs - startMs) / 60_000,
    };
  });
}

const CASES: Case[] = [
  {
    name: `one ${(ROWS / 1e6).toFixed(1)} M-row zip (1s klines)`,
    code: 'BTC',
    symbol: 'BTCUSDT',
    interval: '1s',
    stepMs: 1000,
    from: '2024-01-01',
    to: '2024-02-01',
    months: [{ period: '2024-01', startMs: Date.UTC(2024, 0, 1), rows: ROWS }],
  },
  {
    name: '46 monthly zips (1m klines)',
    code: 'ETH',
    symbol: 'ETHUSDT',
    interval: '1m',
    stepMs: 60_000,
    from: '2020-01-01',
    to: '2023-11-01',
    months: monthsOf(2020, 46),
  },
];

const zipPath = (c: Case, period: string) => join(out, `${c.symbol}-${c.interval}-${period}.zip`);
const csvPath = (c: Case) => join(out, `${c.symbol}-${c.interval}-psql.csv`);
const totalRows = (c: Case) => c.months.reduce((n, m) => n + m.rows, 0);

function kline(i: number, t: number) {
  const open = 20_000 + 500 * Math.sin(i / 5000) + (i % 97);
  const close = open * (1 + 0.001 * Math.cos(i / 7));
  const high = Math.max(open, close) * 1.0005;
  const low = Math.min(open, close) * 0.9995;
  const volume = 1 + (i % 1000) / 10;
  return { t, open, high, low, close, volume };
}

/** The archives (Binance's 12 columns, ms, no header) and the psql CSV of the same rows. */
async function generate(c: Case) {
  if (existsSync(csvPath(c))) return;
  mkdirSync(out, { recursive: true });
  const psql = createWriteStream(csvPath(c));
  let i = 0;
  for (const month of c.months) {
    const entry = createWriteStream(join(out, 'entry.csv'));
    let archiveText = '';
    let psqlText = '';
    for (let r = 0; r < month.rows; r++, i++) {
      const k = kline(i, month.startMs + r * c.stepMs);
      const p = [k.open, k.high, k.low, k.close].map((v) => v.toFixed(8));
      archiveText += `${k.t},${p.join(',')},${k.volume.toFixed(8)},${k.t + c.stepMs - 1},${(k.volume * k.close).toFixed(8)},${i % 500},${(k.volume / 2).toFixed(8)},${((k.volume / 2) * k.close).toFixed(8)},0\n`;
      psqlText += `${new Date(k.t).toISOString()},${c.code},${p.join(',')},${k.volume.toFixed(8)}\n`;
      if (archiveText.length > 1 << 20) {
        if (!entry.write(archiveText)) await once(entry, 'drain');
        if (!psql.write(psqlText)) await once(psql, 'drain');
        archiveText = '';
        psqlText = '';
      }
    }
    entry.end(archiveText);
    await once(entry, 'finish');
    if (!psql.write(psqlText)) await once(psql, 'drain');
    const zip = new yazl.ZipFile();
    zip.addFile(join(out, 'entry.csv'), `${c.symbol}-${c.interval}-${month.period}.csv`);
    zip.end();
    await pipeline(zip.outputStream, createWriteStream(zipPath(c, month.period)));
  }
  psql.end();
  await once(psql, 'finish');
}

/** Binance's archive layout over HTTP, from memory: zip and .CHECKSUM, 404 for the rest. */
async function serveArchives() {
  const files = new Map<string, Buffer>();
  for (const c of CASES) {
    for (const month of c.months) {
      const name = `${c.symbol}-${c.interval}-${month.period}.zip`;
      const bytes = readFileSync(zipPath(c, month.period));
      const path = `/data/spot/monthly/klines/${c.symbol}/${c.interval}/${name}`;
      files.set(path, bytes);
      const sha = createHash('sha256').update(bytes).digest('hex');
      files.set(`${path}.CHECKSUM`, Buffer.from(`${sha}  ${name}\n`));
    }
  }
  const http = createServer((req, res) => {
    const body = files.get(req.url ?? '');
    res.writeHead(body ? 200 : 404, { 'content-length': body?.length ?? 0 });
    res.end(body);
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    close: () => http.close(),
  };
}

/** (a) the whole command, start-up included. */
async function viaArchive(c: Case, archiveUrl: string) {
  const name = 'bench_h21archive_cmd';
  const url = await freshDatabase(name);
  const node = join(root, 'node_modules', '.bin', 'node');
  const args = [
    'backfill',
    '--source',
    'binance-archive',
    '--code',
    c.code,
    '--from',
    c.from,
    '--to',
    c.to,
    '--interval',
    c.interval,
    '--json',
  ];
  const started = performance.now();
  // Asynchronously: the archive server answers from this very process.
  await new Promise<void>((resolve, reject) =>
    execFile(
      node,
      [join(root, 'bin', 'platform.mjs'), ...args],
      {
        env: {
          ...process.env,
          DATABASE_URL: url,
          BINANCE_ARCHIVE_URL: archiveUrl,
          BINANCE_API_URL: archiveUrl,
          LOG_LEVEL: 'warn',
        },
        maxBuffer: 1 << 26,
      },
      (error, stdout, stderr) =>
        error ? reject(new Error(`backfill failed: ${stderr}\n${stdout}`)) : resolve(),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const rows = await count(url);
  await dropBenchDatabase(name);
  return { seconds, rows, command: `platform ${args.join(' ')}` };
}

/** (b) psql's \copy of the same rows. */
async function viaPsql(c: Case) {
  const name = 'bench_h21archive_psql';
  const url = await freshDatabase(name);
  execFileSync('psql', [
    url,
    '-qc',
    `ALTER TABLE price_observations ALTER COLUMN source SET DEFAULT 'psql'`,
  ]);
  const started = performance.now();
  execFileSync('psql', [
    url,
    '-qc',
    `\\copy price_observations (time, currency_code, open, high, low, close, volume) FROM '${csvPath(c)}' WITH (FORMAT csv)`,
  ]);
  const seconds = (performance.now() - started) / 1000;
  const rows = await count(url);
  await dropBenchDatabase(name);
  return { seconds, rows };
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

async function main() {
  for (const c of CASES) {
    console.log(`generating ${c.name}: ${fmt(totalRows(c))} rows → ${out}`);
    await generate(c);
  }
  const archives = await serveArchives();
  const lines = [
    '| case | (a) archive command s | (a) rows/s | (b) psql \\copy s | (b) rows/s | a / b | load avg (1/5/15 min) |',
    '|---|---:|---:|---:|---:|---:|---|',
  ];
  try {
    for (const c of CASES) {
      const before = load();
      console.log(`(a) ${c.name} …`);
      const a = await viaArchive(c, archives.url);
      console.log(`    ${a.command}: ${a.seconds.toFixed(1)} s, ${fmt(a.rows)} rows`);
      console.log(`(b) psql \\copy of the same rows …`);
      const b = await viaPsql(c);
      console.log(`    ${b.seconds.toFixed(1)} s, ${fmt(b.rows)} rows`);
      if (a.rows !== totalRows(c) || b.rows !== totalRows(c))
        throw new Error(
          `row counts differ: archive ${a.rows}, psql ${b.rows}, expected ${totalRows(c)}`,
        );
      const ratio = a.rows / a.seconds / (b.rows / b.seconds);
      lines.push(
        `| ${c.name} | ${a.seconds.toFixed(1)} | ${fmt(a.rows / a.seconds)} | ${b.seconds.toFixed(1)} | ${fmt(b.rows / b.seconds)} | **${ratio.toFixed(2)}** | ${before} → ${load()} |`,
      );
    }
  } finally {
    archives.close();
  }
  console.log(`\n${lines.join('\n')}\n\ngoal: a / b ≥ 1.0 (whole command, start-up included)`);
}

await main();
