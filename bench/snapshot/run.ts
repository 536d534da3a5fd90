// bench:snapshot — GET /data/currency/all (the snapshot of 136 coins with their 24-hour
// statistics) of a baseline commit and of this tree, side by side in one run:
//
//   npm run bench:snapshot [-- --baseline <git ref>] [--rounds 3] [--seconds 10] [--connections 50]
//
// Checks the baseline (default 8d1124f, the code before the snapshot was kept in memory) out into
// a temporary worktree sharing this tree's node_modules, starts both data modules as their own
// processes on one fresh database with the same data and the same token, and measures each with
// autocannon in turns (baseline, current, current, baseline, …) so both see the same machine.
// Prints requests/s, p50/p99 latency, errors and non-2xx per run and the ratio of the totals,
// the load average, and whether both answer the same bytes. Exit code 1 on any error or non-2xx.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { sql } from 'slonik';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { createDatabasePool } from '../../src/shared/db/pool.ts';
import { startDataProcess, type DataProcess } from '../history/dataProcess.ts';
import { benchDatabaseUrl, createEmptyDatabase } from '../shared/databases.ts';

const { values: args } = parseArgs({
  options: {
    baseline: { type: 'string', default: '8d1124f' },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
  },
});
const ROUNDS = Number(args.rounds);
const SECONDS = Number(args.seconds);
const CONNECTIONS = Number(args.connections);

const root = new URL('../..', import.meta.url).pathname;
const DB = 'bench_snapshot';
const dbUrl = benchDatabaseUrl(DB);
const log = (line: string) => process.stdout.write(`${line}\n`);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

/** Current snapshots of every coin and a day of minute prices for a few (the 24-hour figures). */
async function seed(token: { value: string }) {
  const pool = await createDatabasePool(dbUrl);
  try {
    await pool.query(sql.unsafe`
      INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
      SELECT c, t, p, p, p, p, 1, 'bench'
      FROM unnest(ARRAY['BTC','ETH','SOL','DOGE']) AS c,
           generate_series(date_trunc('hour', now()) - interval '30 hours', now(), interval '1 minute') AS t,
           LATERAL (SELECT 50000 + 1000 * sin(extract(epoch FROM t) / 3600) AS p) AS price`);
    await pool.query(sql.unsafe`
      INSERT INTO currency_snapshots (currency_code, price, observed_at, source)
      SELECT code, 1 + row_number() OVER (ORDER BY code), date_trunc('minute', now()), 'bench'
      FROM currencies`);
    token.value = (await createToken(pool, `bench-${Date.now()}`, ['read'])).token;
  } finally {
    await pool.end();
  }
}

interface Figures {
  requests: number;
  seconds: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

async function measure(target: DataProcess, token: string, seconds: number): Promise<Figures> {
  const result = await autocannon({
    url: `${target.url}/data/currency/all`,
    headers: { authorization: `Bearer ${token}` },
    connections: CONNECTIONS,
    duration: seconds,
  });
  return {
    requests: result.requests.total,
    seconds: result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

const row = (name: string, round: number, f: Figures) =>
  `| ${name} | ${round} | ${Math.round(f.requests / f.seconds)} | ${f.p50} | ${f.p99} | ${f.errors} | ${f.non2xx} |`;

async function sameAnswer(a: DataProcess, b: DataProcess, token: string): Promise<boolean> {
  const get = (s: DataProcess) =>
    fetch(`${s.url}/data/currency/all`, { headers: { authorization: `Bearer ${token}` } }).then(
      async (r) => `${r.status} ${r.headers.get('content-type')}\n${await r.text()}`,
    );
  // The 24-hour window slides with the clock: a minute boundary between the two reads can move
  // an open; one more try tells that apart from a real difference.
  for (let attempt = 0; attempt < 2; attempt += 1) {
    const [x, y] = await Promise.all([get(a), get(b)]);
    if (x === y) return true;
  }
  return false;
}

async function main() {
  const worktree = mkdtempSync(join(tmpdir(), 'snapshot-baseline-'));
  const servers: DataProcess[] = [];
  let failed = false;
  try {
    await createEmptyDatabase(DB);
    execFileSync('git', ['-C', root, 'worktree', 'add', '--detach', worktree, args.baseline], {
      stdio: 'ignore',
    });
    symlinkSync(join(root, 'node_modules'), join(worktree, 'node_modules'));
    // The baseline first: it migrates the empty database with its own migrations, then this
    // tree's start adds the newer ones (an older tree refuses migrations it does not know).
    const baseline = await startDataProcess(dbUrl, join(worktree, 'bin/platform.mjs'));
    servers.push(baseline);
    const current = await startDataProcess(dbUrl);
    servers.push(current);
    const token = { value: '' };
    await seed(token);
    const identical = await sameAnswer(baseline, current, token.value);
    log(
      `# bench:snapshot — GET /data/currency/all, ${CONNECTIONS} connections, ${SECONDS} s a run`,
    );
    log(`baseline ${args.baseline} vs this tree; load average before: ${load()}`);
    log(`same status, content type and bytes from both: ${identical ? 'yes' : 'NO'}`);
    log('');
    log('| code | round | req/s | p50 ms | p99 ms | errors | non-2xx |');
    log('|---|---|---|---|---|---|---|');
    const totals = new Map<string, Figures[]>([
      ['baseline', []],
      ['current', []],
    ]);
    for (let round = 1; round <= ROUNDS; round += 1) {
      const order: Array<[string, DataProcess]> = [
        ['baseline', baseline],
        ['current', current],
      ];
      if (round % 2 === 0) order.reverse();
      for (const [name, target] of order) {
        await measure(target, token.value, 2); // warm-up, not counted
        const figures = await measure(target, token.value, SECONDS);
        totals.get(name)!.push(figures);
        log(row(name, round, figures));
        if (figures.errors > 0 || figures.non2xx > 0) failed = true;
      }
    }
    const rate = (runs: Figures[]) =>
      runs.reduce((s, f) => s + f.requests, 0) / runs.reduce((s, f) => s + f.seconds, 0);
    const worstP99 = (runs: Figures[]) => Math.max(...runs.map((f) => f.p99));
    const [base, mine] = [totals.get('baseline')!, totals.get('current')!];
    log('');
    log(
      `baseline ${Math.round(rate(base))} req/s (worst p99 ${worstP99(base)} ms); ` +
        `current ${Math.round(rate(mine))} req/s (worst p99 ${worstP99(mine)} ms); ` +
        `ratio ${(rate(mine) / rate(base)).toFixed(1)}×`,
    );
    log(`load average after: ${load()}`);
    if (!identical) failed = true;
  } finally {
    await Promise.allSettled(servers.map((s) => s.stop()));
    execFileSync('git', ['-C', root, 'worktree', 'remove', '--force', worktree], {
      stdio: 'ignore',
    });
    rmSync(worktree, { recursive: true, force: true });
  }
  process.exitCode = failed ? 1 : 0;
}

await main();
