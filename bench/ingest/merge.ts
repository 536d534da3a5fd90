// bench:ingest:merge — the whole `platform backfill <csv>` command against what a DBA does by hand
// with psql, on the same file, each side into its own freshly created database, alternately, for
// several rounds; prints the medians and their ratios side by side.
//
// - fast path: a 2 M-row CSV into an empty table; the DBA's side is `psql -c "\copy …"` straight
//   into price_observations (goal: backfill ≥ 1.0× psql).
// - merge path: a 1 M-row CSV of which half the rows are already stored, in three layouts (the
//   newer half of every currency, the older half, every other minute); the DBA's side is
//   `\copy` into an UNLOGGED staging table, then `INSERT … SELECT … ON CONFLICT DO NOTHING`
//   (goal: backfill ≥ 1.0× the DBA).
// Both sides end with the same rows: the benchmark checks it in every round. Besides the wall
// time, each side's CPU time (the command's plus its database backends', measured.ts) is
// reported: on a shared machine the wall time follows the load, the CPU time much less.
//
// Environment: BENCH_ROUNDS (3), BENCH_FAST_ROWS (2,000,000), BENCH_MERGE_ROWS (1,000,000),
// BENCH_LAYOUTS (newer,older,alternate), BENCH_DB_PREFIX (bench_merge), BENCH_DATABASE_URL.
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { CODES, count, freshDatabase, generateCsv, query, root, START_MS } from './common.ts';
import { dropBenchDatabase } from '../shared/databases.ts';
import { measured, type Measured } from './measured.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const FAST_ROWS = Number(process.env.BENCH_FAST_ROWS ?? 2_000_000);
const MERGE_ROWS = Number(process.env.BENCH_MERGE_ROWS ?? 1_000_000);
const LAYOUTS = (process.env.BENCH_LAYOUTS ?? 'newer,older,alternate').split(',') as Layout[];
const PREFIX = process.env.BENCH_DB_PREFIX ?? 'bench_merge';
const CSV_COLUMNS = '(time, currency_code, open, high, low, close, volume)';

type Layout = 'newer' | 'older' | 'alternate';

/** Which of the file's rows are stored before the load, as a condition on `time`. */
function storedRows(layout: Layout, rows: number): string {
  const middle = new Date(START_MS + Math.ceil(rows / CODES.length / 2) * 60_000).toISOString();
  if (layout === 'newer') return `time >= '${middle}'`;
  if (layout === 'older') return `time < '${middle}'`;
  return `(extract(epoch FROM time)::bigint / 60) % 2 = 0`;
}

/** A fresh database; for the merge path, half the file's rows stored (not timed). */
async function prepare(name: string, csv: string, layout: Layout | null, rows: number) {
  const url = await freshDatabase(name);
  if (layout) {
    psql(
      url,
      `CREATE TEMP TABLE seed (LIKE price_observations);
       ALTER TABLE seed ALTER COLUMN source SET DEFAULT 'stored';
       \\copy seed ${CSV_COLUMNS} FROM '${csv}' WITH (FORMAT csv, HEADER true)
       INSERT INTO price_observations SELECT * FROM seed WHERE ${storedRows(layout, rows)};`,
    );
  }
  await query(url, 'VACUUM ANALYZE price_observations');
  return url;
}

function psql(url: string, script: string) {
  execFileSync('psql', [url, '-q', '-v', 'ON_ERROR_STOP=1'], {
    input: script,
    stdio: ['pipe', 'ignore', 'inherit'],
  });
}

async function backfill(url: string, csv: string): Promise<Measured & { inserted: number }> {
  const run = await measured(
    url,
    join(root, 'node_modules', '.bin', 'node'),
    [join(root, 'bin', 'platform.mjs'), 'backfill', csv, '--json'],
    { env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' } },
  );
  return { ...run, inserted: (JSON.parse(run.stdout) as { inserted: number }).inserted };
}

const psqlScript = (url: string, script: string) =>
  measured(url, 'psql', [url, '-q', '-v', 'ON_ERROR_STOP=1'], { input: script });

/** psql's \copy straight into the hypertable. */
const psqlCopy = (url: string, csv: string) =>
  psqlScript(
    url,
    `ALTER TABLE price_observations ALTER COLUMN source SET DEFAULT 'psql';
     \\copy price_observations ${CSV_COLUMNS} FROM '${csv}' WITH (FORMAT csv, HEADER true)`,
  );

/** The DBA's merge: UNLOGGED staging table, \copy, INSERT … ON CONFLICT DO NOTHING. */
const dbaMerge = (url: string, csv: string) =>
  psqlScript(
    url,
    `CREATE UNLOGGED TABLE stage (LIKE price_observations);
     ALTER TABLE stage ALTER COLUMN source SET DEFAULT 'psql';
     \\copy stage ${CSV_COLUMNS} FROM '${csv}' WITH (FORMAT csv, HEADER true)
     INSERT INTO price_observations SELECT * FROM stage ON CONFLICT DO NOTHING;
     DROP TABLE stage;`,
  );

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

interface Case {
  label: string;
  csv: string;
  rows: number;
  layout: Layout | null;
  baseline: string;
  runBaseline: (url: string, csv: string) => Promise<Measured>;
}

/** Alternates the two sides, each round in fresh databases; checks both end with every row. */
async function compare(c: Case) {
  const platform: Measured[] = [];
  const baseline: Measured[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const side of round % 2 ? ['platform', 'baseline'] : ['baseline', 'platform']) {
      const name = `${PREFIX}_${side}`;
      const url = await prepare(name, c.csv, c.layout, c.rows);
      const before = await count(url);
      let run: Measured;
      if (side === 'platform') {
        const loaded = await backfill(url, c.csv);
        if (loaded.inserted !== c.rows - before) {
          throw new Error(
            `${c.label}: backfill inserted ${loaded.inserted}, expected ${c.rows - before}`,
          );
        }
        run = loaded;
        platform.push(run);
      } else {
        run = await c.runBaseline(url, c.csv);
        baseline.push(run);
      }
      const after = await count(url);
      if (after !== c.rows)
        throw new Error(`${c.label}/${side}: ${after} rows stored, expected ${c.rows}`);
      console.log(
        `  ${c.label} round ${round} ${side}: ${run.seconds.toFixed(2)} s, CPU ${cpuText(run.cpu)} (load ${loadavg()[0]?.toFixed(1)})`,
      );
      await dropBenchDatabase(name);
    }
  }
  const p = median(platform.map((r) => r.seconds));
  const b = median(baseline.map((r) => r.seconds));
  const pCpu = medianCpu(platform);
  const bCpu = medianCpu(baseline);
  const cpuRatio = pCpu && bCpu ? (bCpu / pCpu).toFixed(2) : 'n/a';
  return `| ${c.label} | ${c.rows.toLocaleString('en-US')} | ${p.toFixed(2)} | ${c.baseline} | ${b.toFixed(2)} | **${(b / p).toFixed(2)}** | ${cpuText(pCpu)} | ${cpuText(bCpu)} | ${cpuRatio} |`;
}

const cpuText = (cpu: number | null) => (cpu === null ? 'n/a' : cpu.toFixed(2));

/** Median CPU seconds of the runs, or null when any run's CPU is unknown. */
function medianCpu(runs: Measured[]): number | null {
  return runs.every((r) => r.cpu !== null) ? median(runs.map((r) => r.cpu as number)) : null;
}

async function main() {
  const loadBefore = loadavg()
    .map((n) => n.toFixed(1))
    .join(' ');
  const fastCsv = await generateCsv(FAST_ROWS);
  const mergeCsv = await generateCsv(MERGE_ROWS);
  const lines = [
    `| case | rows | platform backfill s (median) | baseline | baseline s (median) | speed vs baseline (goal ≥ 1.0) | platform CPU s | baseline CPU s | CPU ratio |`,
    `|---|---:|---:|---|---:|---:|---:|---:|---:|`,
  ];
  lines.push(
    await compare({
      label: 'fast path, empty table',
      csv: fastCsv,
      rows: FAST_ROWS,
      layout: null,
      baseline: 'psql `\\copy`',
      runBaseline: psqlCopy,
    }),
  );
  for (const layout of LAYOUTS) {
    lines.push(
      await compare({
        label: `merge path, ${layout} half stored`,
        csv: mergeCsv,
        rows: MERGE_ROWS,
        layout,
        baseline: 'DBA staging merge',
        runBaseline: dbaMerge,
      }),
    );
  }
  console.log(
    `\n${ROUNDS} rounds, load average before: ${loadBefore}, after: ${loadavg()
      .map((n) => n.toFixed(1))
      .join(' ')}\n`,
  );
  console.log(lines.join('\n'));
}

await main();
