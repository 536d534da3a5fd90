// bench:startup — the CLI's own start-up: `platform backfill small.csv --force --json` (2 rows, a
// migrated database that already holds them) and `platform --help`, of a baseline commit and of
// this tree, side by side in one run:
//
//   npm run bench:startup [-- --baseline <git ref>] [--runs 20]
//
// Checks the baseline out into a temporary worktree sharing this tree's node_modules; each side
// loads into a database of its own (BENCH_DB_PREFIX, default bench_startup, + _base / _current),
// created and migrated first. After one warm-up run each (it fills Node's compile cache and
// stores the rows), the sides alternate (baseline, current, current, baseline, …). Every process
// runs with bench/startup/probe.mjs, which notes when it first sends COPY data (its first rows
// leave for the database) and its CPU time then and at exit. Prints the medians of the whole
// command and of the time before the first row, wall and CPU seconds, with the load average.
// CPU seconds are the steadier figure on a shared machine; wall seconds include waiting for a core.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { dropBenchDatabase, recreateDatabase } from '../shared/databases.ts';

const { values: args } = parseArgs({
  options: {
    baseline: { type: 'string', default: 'eeeaa07' },
    runs: { type: 'string', default: '20' },
  },
});
const RUNS = Number(args.runs);
const PREFIX = process.env.BENCH_DB_PREFIX ?? 'bench_startup';
const root = new URL('../..', import.meta.url).pathname;
const node = join(root, 'node_modules', '.bin', 'node');
const probe = join(root, 'bench', 'startup', 'probe.mjs');
const log = (line: string) => process.stdout.write(`${line}\n`);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

interface Side {
  name: 'baseline' | 'current';
  cli: string;
  databaseUrl: string;
}

interface Run {
  wall: number;
  cpu: number;
  /** Before the first COPY data; null for a command that loads nothing. */
  firstRowWall: number | null;
  firstRowCpu: number | null;
}

interface Probe {
  firstRowAt: number | null;
  firstRowCpu: number | null;
  exitAt: number | null;
  exitCpu: number | null;
}

const now = () => performance.timeOrigin + performance.now();

/** One `platform …` process under the probe; fails loudly when the command fails. */
function runCli(side: Side, argv: string[], work: string): Run {
  const out = join(work, `probe-${side.name}.json`);
  rmSync(out, { force: true });
  const started = now();
  const run = spawnSync(node, ['--import', probe, side.cli, ...argv], {
    env: {
      ...process.env,
      DATABASE_URL: side.databaseUrl,
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
      STARTUP_PROBE_OUT: out,
    },
    encoding: 'utf8',
  });
  const ended = now();
  if (run.status !== 0) {
    throw new Error(`${side.name} ${argv.join(' ')} exited ${run.status}: ${run.stderr}`);
  }
  const figures = JSON.parse(readFileSync(out, 'utf8')) as Probe;
  return {
    wall: (ended - started) / 1000,
    cpu: figures.exitCpu ?? Number.NaN,
    firstRowWall: figures.firstRowAt === null ? null : (figures.firstRowAt - started) / 1000,
    firstRowCpu: figures.firstRowCpu,
  };
}

/** The backfill must have read both rows and found them stored (or stored them). */
function checkedBackfill(side: Side, csv: string, work: string): Run {
  const run = runCli(side, ['backfill', csv, '--force', '--json'], work);
  if (run.firstRowWall === null) throw new Error(`${side.name}: the backfill sent no COPY data`);
  return run;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'startup-bench-'));
  const worktree = join(work, 'baseline');
  const csv = join(work, 'small.csv');
  writeFileSync(
    csv,
    'time,code,open,high,low,close,volume\n' +
      '2024-01-01T00:00:00Z,BTC,42000,42010,41990,42005,1.5\n' +
      '2024-01-01T00:01:00Z,BTC,42005,42020,42000,42015,2.5\n',
  );
  const names = { baseline: `${PREFIX}_base`, current: `${PREFIX}_current` };
  try {
    execFileSync('git', ['-C', root, 'worktree', 'add', '--detach', worktree, args.baseline], {
      stdio: 'ignore',
    });
    symlinkSync(join(root, 'node_modules'), join(worktree, 'node_modules'));
    const sides: Side[] = [
      {
        name: 'baseline',
        cli: join(worktree, 'bin', 'platform.mjs'),
        databaseUrl: await recreateDatabase(names.baseline),
      },
      {
        name: 'current',
        cli: join(root, 'bin', 'platform.mjs'),
        databaseUrl: await recreateDatabase(names.current),
      },
    ];
    // Warm-up: compile caches filled, the shipped currencies and both rows stored.
    for (const side of sides) {
      checkedBackfill(side, csv, work);
      runCli(side, ['--help'], work);
    }
    log(`# bench:startup — baseline ${args.baseline} vs this tree, ${RUNS} runs each, alternating`);
    log(`load average before: ${load()}`);
    const backfills = { baseline: [] as Run[], current: [] as Run[] };
    const helps = { baseline: [] as Run[], current: [] as Run[] };
    for (let round = 0; round < RUNS; round += 1) {
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) backfills[side.name].push(checkedBackfill(side, csv, work));
      for (const side of order) helps[side.name].push(runCli(side, ['--help'], work));
    }
    log(`load average after: ${load()}`);
    log('');
    log('| command | figure (median, s) | baseline | current | current / baseline |');
    log('|---|---|---:|---:|---:|');
    const row = (command: string, figure: string, pick: (run: Run) => number, of: typeof helps) => {
      const [b, c] = [median(of.baseline.map(pick)), median(of.current.map(pick))];
      log(`| ${command} | ${figure} | ${b.toFixed(3)} | ${c.toFixed(3)} | ${(c / b).toFixed(2)} |`);
    };
    const backfill = '`backfill small.csv --force`';
    row(backfill, 'CPU before the first row', (r) => r.firstRowCpu!, backfills);
    row(backfill, 'CPU, whole command', (r) => r.cpu, backfills);
    row(backfill, 'wall before the first row', (r) => r.firstRowWall!, backfills);
    row(backfill, 'wall, whole command', (r) => r.wall, backfills);
    row('`--help`', 'CPU, whole command', (r) => r.cpu, helps);
    row('`--help`', 'wall, whole command', (r) => r.wall, helps);
  } finally {
    for (const name of Object.values(names)) await dropBenchDatabase(name);
    execFileSync('git', ['-C', root, 'worktree', 'remove', '--force', worktree], {
      stdio: 'ignore',
    });
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
